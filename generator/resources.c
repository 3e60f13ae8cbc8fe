/* resources.c: `gdngen resources OUT.md LOG...`, the codegen guard's
 * reader of ptxas -v logs (CUDA 13.0 format).
 *
 * Each log is one .cu file (build/ptxas/<stem>.log). It is read twice:
 * first the per-function records (split on "Compiling entry function",
 * then the stack/spill line and the "Used N registers" line), then the
 * diagnostics ("(C75xx)", "Local memory used", "Registers are spilled"),
 * which ptxas may print before the function they name. The report is a
 * markdown table sorted by file then kernel, with no dates, paths or
 * timings, so the same logs give the same bytes. A kernel that spills,
 * has a stack, uses local memory or is serialized makes the call fail;
 * the report is written all the same. Lines it does not know are ignored.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

#define RES_MAX 1024  /* functions over all logs */
#define RES_NAME 512  /* mangled names are long */
#define RES_LINE 8192

typedef struct Res {
  char file[64];       /* log stem: gdn_generic */
  char name[RES_NAME]; /* "(whole file)" for diagnostics naming no function */
  int entry;           /* 0: a device function ptxas kept apart */
  long regs, bars, smem, stack, spst, spld, cum; /* -1: not printed */
  int lmem, rspill;    /* "Local memory used", "Registers are spilled" */
  char notes[256];     /* the diagnostics column */
  char fails[256];     /* the failing ptxas codes, for the Diag */
} Res;

typedef struct ResSet {
  Res r[RES_MAX];
  int n;
  ArchId arch;
  int have_arch;
} ResSet;

/* The ptxas codes the guard knows; fail = 1 makes the kernel fail. A code
 * not listed fails too when its message says wgmma is serialized. */
static const struct {
  int code, fail;
  const char *what;
} res_codes[] = {
    {7508, 1, "setmaxnreg ignored"},
    {7510, 1, "wgmma pipeline crosses a call"},
    {7511, 1, "wgmma serialized: insufficient registers"},
    {7512, 1, "wgmma serialized: insufficient register resources"},
    {7514, 1, "wgmma serialized: accumulators read in flight"},
    {7515, 1, "wgmma serialized"},
    {7519, 0, "warpgroup.arrive injected"},
};

/* The text between the first pair of single quotes after `from`. */
static int quoted(const char *from, char *out, size_t n) {
  const char *a = from ? strchr(from, '\'') : NULL;
  const char *b = a ? strchr(a + 1, '\'') : NULL;
  if (!b || (size_t)(b - a - 1) >= n)
    return -1;
  memcpy(out, a + 1, (size_t)(b - a - 1));
  out[b - a - 1] = '\0';
  return 0;
}

static Res *res_find(ResSet *s, const char *file, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->r[i].file, file) && !strcmp(s->r[i].name, name))
      return &s->r[i];
  return NULL;
}

static Res *res_add(ResSet *s, const char *file, const char *name, int entry, Diag *d) {
  Res *r = res_find(s, file, name);
  if (r)
    return r;
  if (s->n == RES_MAX) {
    diag_fail(d, "resources: more than %d functions in the logs", RES_MAX);
    return NULL;
  }
  r = &s->r[s->n++];
  memset(r, 0, sizeof *r);
  snprintf(r->file, sizeof r->file, "%s", file);
  snprintf(r->name, sizeof r->name, "%s", name);
  r->entry = entry;
  r->regs = r->bars = r->stack = r->spst = r->spld = r->cum = -1;
  r->smem = entry ? 0 : -1; /* ptxas prints smem only when there is some */
  return r;
}

/* "Used 168 registers, used 2 barriers, 0 bytes cumulative stack size,
 * 1024 bytes smem": each comma-separated part is a number and a unit. */
static void parse_used(Res *r, const char *s) {
  while (s && *s) {
    long v;
    char unit[64] = "";
    while (*s == ' ' || *s == ',')
      s++;
    if (sscanf(s, "%*[Uu]sed %ld %63[^,\n]", &v, unit) == 2 || sscanf(s, "%ld %63[^,\n]", &v, unit) == 2) {
      if (!strncmp(unit, "registers", 9))
        r->regs = v;
      else if (!strncmp(unit, "barriers", 8))
        r->bars = v;
      else if (!strncmp(unit, "bytes cumulative stack", 22))
        r->cum = v;
      else if (!strcmp(unit, "bytes smem"))
        r->smem = v;
    }
    s = strchr(s, ',');
  }
}

/* Pass 1: one line of the log into the records. */
static int parse_record(ResSet *s, const char *file, const char *line, Res **cur, Diag *d) {
  const char *p;
  char name[RES_NAME], arch[32];
  long a, b, c;
  if ((p = strstr(line, "Compiling entry function '"))) {
    if (quoted(p, name, sizeof name))
      return 0;
    const char *q = strstr(p, "' for '");
    if (!s->have_arch && q && quoted(q + 1, arch, sizeof arch) == 0)
      s->have_arch = arch_parse(arch, &s->arch) == 0;
    if (!(*cur = res_add(s, file, name, 1, d)))
      return -1;
    (*cur)->entry = 1; /* its properties may have come first */
    if ((*cur)->smem < 0)
      (*cur)->smem = 0;
    return 0;
  }
  if ((p = strstr(line, "Function properties for "))) {
    snprintf(name, sizeof name, "%s", p + 24);
    name[strcspn(name, "\r\n ")] = '\0';
    if (!*cur || strcmp((*cur)->name, name))
      *cur = res_add(s, file, name, 0, d);
    return *cur ? 0 : -1;
  }
  if (*cur && sscanf(line, " %ld bytes stack frame, %ld bytes spill stores, %ld bytes spill loads", &a,
                     &b, &c) == 3) {
    (*cur)->stack = a;
    (*cur)->spst = b;
    (*cur)->spld = c;
  } else if (*cur && (p = strstr(line, "Used ")) && strstr(line, " registers")) {
    parse_used(*cur, p);
  }
  return 0;
}

static void add_note(char *list, size_t n, const char *note) {
  if (strstr(list, note))
    return;
  size_t len = strlen(list);
  snprintf(list + len, n - len, "%s%s", len ? "; " : "", note);
}

enum { NOTE_NONE, NOTE_CODE, NOTE_LMEM, NOTE_RSPILL };

/* The diagnostic a line carries: its kind, its text, whether it fails. */
static int line_note(const char *line, char *note, size_t n, int *fail) {
  const char *p = strstr(line, "(C");
  int code;
  *fail = 1;
  if (strstr(line, "Local memory used for function")) {
    snprintf(note, n, "local memory used");
    return NOTE_LMEM;
  }
  if (strstr(line, "Registers are spilled")) {
    snprintf(note, n, "registers spilled to local memory");
    return NOTE_RSPILL;
  }
  if (!p || sscanf(p, "(C%d)", &code) != 1)
    return NOTE_NONE;
  *fail = strstr(line, "are serialized") != NULL;
  snprintf(note, n, "C%d", code);
  for (size_t i = 0; i < COUNT_OF(res_codes); i++)
    if (res_codes[i].code == code) {
      *fail = res_codes[i].fail;
      snprintf(note, n, "C%d %s", code, res_codes[i].what);
    }
  return NOTE_CODE;
}

/* Pass 2: a diagnostic goes to the function it names, else to the file. */
static int parse_note(ResSet *s, const char *file, const char *line, Diag *d) {
  char note[96], name[RES_NAME];
  int fail, kind = line_note(line, note, sizeof note, &fail);
  if (kind == NOTE_NONE)
    return 0;
  const char *p = strstr(line, "function '");
  Res *r = p && quoted(p, name, sizeof name) == 0 ? res_find(s, file, name) : NULL;
  if (!r && !(r = res_add(s, file, "(whole file)", 0, d)))
    return -1;
  add_note(r->notes, sizeof r->notes, note);
  r->lmem |= kind == NOTE_LMEM;
  r->rspill |= kind == NOTE_RSPILL;
  if (fail && kind == NOTE_CODE)
    add_note(r->fails, sizeof r->fails, note);
  return 0;
}

/* Reads the next line; the tail of an overlong line is dropped. */
static int read_line(FILE *f, char *buf, size_t n) {
  if (!fgets(buf, (int)n, f))
    return 0;
  if (!strchr(buf, '\n')) {
    int c;
    while ((c = fgetc(f)) != EOF && c != '\n')
      ;
  }
  return 1;
}

static void log_stem(const char *path, char *stem, size_t n) {
  const char *b = strrchr(path, '/');
  snprintf(stem, n, "%s", b ? b + 1 : path);
  size_t len = strlen(stem);
  if (len > 4 && !strcmp(stem + len - 4, ".log"))
    stem[len - 4] = '\0';
}

static int parse_log(ResSet *s, const char *path, Diag *d) {
  static char line[RES_LINE];
  char file[64];
  FILE *f = fopen(path, "r");
  if (!f)
    return diag_fail(d, "resources: cannot read %s: %s", path, strerror(errno));
  log_stem(path, file, sizeof file);
  int before = s->n, rc = 0, entries = 0;
  Res *cur = NULL;
  while (rc == 0 && read_line(f, line, sizeof line))
    rc = parse_record(s, file, line, &cur, d);
  rewind(f);
  while (rc == 0 && read_line(f, line, sizeof line))
    rc = parse_note(s, file, line, d);
  fclose(f);
  for (int i = before; i < s->n; i++)
    entries += s->r[i].entry;
  if (rc == 0 && entries == 0)
    return diag_fail(d, "resources: %s names no entry function: not the output of ptxas -v?", path);
  return rc;
}

static int res_cmp(const void *a, const void *b) {
  const Res *x = a, *y = b;
  int c = strcmp(x->file, y->file);
  return c ? c : strcmp(x->name, y->name);
}

/* Why a function breaks the rules, or "" when it does not; the warnings
 * are named only where the numbers do not already say it. */
static void res_why(const Res *r, char *why, size_t n) {
  why[0] = '\0';
  char part[96];
  int spills = r->spst > 0 || r->spld > 0, stack = r->stack > 0 || r->cum > 0;
  if (spills) {
    snprintf(part, sizeof part, "%ld bytes spilled, %ld reloaded", r->spst, r->spld);
    add_note(why, n, part);
  }
  if (stack) {
    snprintf(part, sizeof part, "%ld bytes of stack", r->stack > r->cum ? r->stack : r->cum);
    add_note(why, n, part);
  }
  if (r->rspill && !spills)
    add_note(why, n, "registers spilled to local memory");
  if (r->lmem && !stack)
    add_note(why, n, "local memory used");
  if (r->fails[0])
    add_note(why, n, r->fails);
}

static void put_num(Out *o, long v) {
  if (v < 0)
    outf(o, " - |");
  else
    outf(o, " %ld |", v);
}

static void write_table(Out *o, const ResSet *s) {
  outf(o, "| file | kernel | registers | barriers | static smem | stack frame | spill stores |"
          " spill loads | diagnostics |\n");
  outf(o, "|---|---|--:|--:|--:|--:|--:|--:|---|\n");
  for (int i = 0; i < s->n; i++) {
    const Res *r = &s->r[i];
    outf(o, "| %s | %s%s |", r->file, r->name, r->entry || r->name[0] == '(' ? "" : " (device function)");
    put_num(o, r->regs);
    put_num(o, r->bars);
    put_num(o, r->smem);
    put_num(o, r->stack);
    put_num(o, r->spst);
    put_num(o, r->spld);
    outf(o, " %s |\n", r->notes[0] ? r->notes : "-");
  }
}

/* "gdn_scan (gdn_generic)", or "gdn_generic" for the whole file. */
static void res_label(const Res *r, char *buf, size_t n) {
  if (r->name[0] == '(')
    snprintf(buf, n, "%s", r->file);
  else
    snprintf(buf, n, "%s (%s)", r->name, r->file);
}

/* Lists every offender in the report; returns how many there are. */
static int write_problems(Out *o, const ResSet *s) {
  int bad = 0;
  char why[512], label[RES_NAME + 80];
  for (int i = 0; i < s->n; i++) {
    res_why(&s->r[i], why, sizeof why);
    if (!why[0])
      continue;
    if (bad++ == 0)
      outf(o, "\n## Problems\n\n");
    res_label(&s->r[i], label, sizeof label);
    outf(o, "- %s: %s\n", label, why);
  }
  return bad;
}

static void write_report(Out *o, const ResSet *s, int nlogs) {
  gen_header(o, "RESOURCES.md: registers, barriers, stack and spills of every kernel, from ptxas -v.",
             s->arch, ">");
  outf(o, "\nWritten by `gdngen resources` from the ptxas -v logs of the %d generated .cu files;\n"
          "`make check-codegen` fails when a kernel spills, has a stack frame, uses local\n"
          "memory or gets ptxas diagnostic C7508, C7510-C7512, C7514 or C7515 (or any\n"
          "other that says wgmma is serialized), and when this\n"
          "table differs from a fresh compile. Static smem is what ptxas prints (0 when it\n"
          "prints none); the kernels' dynamic shared memory is in generated/gdn_kernels.h\n"
          "and generated/probes.h. For a kernel that moves registers between its\n"
          "warpgroups with setmaxnreg (gdn_scan, gdn_fused), the count is the one at entry.\n\n",
       nlogs);
  write_table(o, s);
}

/* The Diag: one line per offender, as many as fit. */
static void fail_diag(const ResSet *s, int bad, const char *out_md, Diag *d) {
  char why[512], label[RES_NAME + 80];
  int len = snprintf(d->msg, sizeof d->msg, "resources: %d offending kernel%s (report in %s):", bad,
                     bad == 1 ? "" : "s", out_md);
  for (int i = 0, shown = 0; i < s->n && len < (int)sizeof d->msg; i++) {
    res_why(&s->r[i], why, sizeof why);
    if (!why[0])
      continue;
    char one[1200];
    res_label(&s->r[i], label, sizeof label);
    snprintf(one, sizeof one, "\n  %s: %s", label, why);
    if (len + strlen(one) + 40 >= sizeof d->msg) {
      snprintf(d->msg + len, sizeof d->msg - (size_t)len, "\n  ... and %d more, listed in the report",
               bad - shown);
      return;
    }
    len += snprintf(d->msg + len, sizeof d->msg - (size_t)len, "%s", one);
    shown++;
  }
}

int resources_report(const char *out_md, int nlogs, char **logs, Diag *d) {
  static ResSet s;
  s.n = 0;
  s.arch = ARCH_SM90A; /* the only target gdngen emits; the logs say which */
  s.have_arch = 0;
  for (int i = 0; i < nlogs; i++)
    if (parse_log(&s, logs[i], d))
      return -1;
  qsort(s.r, (size_t)s.n, sizeof s.r[0], res_cmp);
  Out o;
  out_init(&o);
  write_report(&o, &s, nlogs);
  int bad = write_problems(&o, &s);
  int rc = out_write_file(&o, out_md, d);
  out_free(&o);
  if (rc == 0 && bad)
    fail_diag(&s, bad, out_md, d);
  return rc ? rc : bad ? -1 : 0;
}
