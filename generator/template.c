/* template.c: kernel skeletons with named slots.
 *
 * A template is CUDA text with slots written @{NAME}. Filling checks both
 * directions: a slot without a value and a value without a slot are
 * errors, so a template and its schedule cannot drift apart silently.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

int template_load(const char *dir, const char *name, Out *text, Diag *d) {
  char *path = path_join(dir, name);
  FILE *f = fopen(path, "rb");
  if (!f) {
    diag_fail(d, "cannot read template %s: %s", path, strerror(errno));
    free(path);
    return -1;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    outf(text, "%.*s", (int)n, buf);
  fclose(f);
  free(path);
  return 0;
}

static int find_slot(const Slot *slots, int n, const char *name, size_t len) {
  for (int i = 0; i < n; i++)
    if (strlen(slots[i].name) == len && strncmp(slots[i].name, name, len) == 0)
      return i;
  return -1;
}

int template_fill(const char *tmpl, const Slot *slots, int n, Out *o, Diag *d) {
  int used[64] = {0};
  if (n > 64)
    return diag_fail(d, "template: %d slots, at most 64", n);
  const char *p = tmpl;
  while (*p) {
    const char *s = strstr(p, "@{");
    if (!s) {
      outf(o, "%s", p);
      break;
    }
    outf(o, "%.*s", (int)(s - p), p);
    const char *e = strchr(s, '}');
    if (!e)
      return diag_fail(d, "template: unterminated slot at \"%.20s\"", s);
    int i = find_slot(slots, n, s + 2, (size_t)(e - s - 2));
    if (i < 0)
      return diag_fail(d, "template: slot @{%.*s} has no value", (int)(e - s - 2), s + 2);
    outf(o, "%s", slots[i].text);
    used[i] = 1;
    p = e + 1;
  }
  for (int i = 0; i < n; i++)
    if (!used[i])
      return diag_fail(d, "template: value for %s has no slot", slots[i].name);
  return 0;
}
