/* template.c: kernel skeletons with named slots.
 *
 * A template is CUDA text with slots written @{NAME}. Filling checks both
 * directions: a slot without a value and a value without a slot are
 * errors, so a template and its schedule cannot drift apart silently.
 */
#include <errno.h>
#include <stdarg.h>
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

/* A slot's value, owned by the table. Its capacity is the schedules' own
 * choice, so running out is a generator bug, not a user's error. */
static void slot_put(Slots *sl, const char *name, char *text) {
  if (sl->n == (int)COUNT_OF(sl->s)) {
    fprintf(stderr, "gdngen: more than %d slots in one schedule\n", sl->n);
    abort();
  }
  sl->owned[sl->n] = text;
  sl->s[sl->n] = (Slot){name, text};
  sl->n++;
}

void slot_add(Slots *sl, const char *name, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  slot_put(sl, name, xstrdup(buf));
}

void slot_out(Slots *sl, const char *name, Out *o) {
  slot_put(sl, name, o->buf ? o->buf : xstrdup(""));
  out_init(o);
}

void slots_free(Slots *sl) {
  for (int i = 0; i < sl->n; i++)
    free(sl->owned[i]);
  sl->n = 0;
}

int template_emit(const char *tmpl_dir, const char *const *tmpl, int ntmpl, Slots *sl, Out *o,
                  Diag *d) {
  Out t;
  out_init(&t);
  int rc = 0;
  for (int i = 0; i < ntmpl && rc == 0; i++)
    rc = template_load(tmpl_dir, tmpl[i], &t, d);
  if (rc == 0)
    rc = template_fill(t.buf, sl->s, sl->n, o, d);
  out_free(&t);
  return rc;
}
