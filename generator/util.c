/* util.c: diagnostics and strings, shared with the runtime and the tests. */
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

int diag_fail(Diag *d, const char *fmt, ...) {
  if (d) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof d->msg, fmt, ap);
    va_end(ap);
  }
  return -1;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "gdngen: out of memory\n");
    exit(1);
  }
  return memcpy(p, s, n);
}

char *path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p) {
    fprintf(stderr, "gdngen: out of memory\n");
    exit(1);
  }
  snprintf(p, n, "%s/%s", dir, name);
  return p;
}
