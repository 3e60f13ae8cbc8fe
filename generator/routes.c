/* routes.c: the route table, specialisations as data.
 *
 * Which exact call keys (T, N, Hq, Hk, Hv, initial state given, final state
 * wanted) take which schedule is configuration, not code: rows come from a
 * file (generator/default.routes unless --config says otherwise) and from
 * --route flags, each checked as it is read, and the table is emitted as
 * generated/gdn_routes.h for libgdn's router (runtime/route.c). A user who
 * wants a specialisation for the shapes of their model edits the rows and
 * runs `make`; no C changes.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

/* The schedules a row may name. `route` and `enumerator` are runtime/gdn.h's
 * gdn_route (the emitted header asserts they agree). `built` says whether
 * this build emits the schedule's kernels: a row whose schedule is not built
 * routes to the generic pipeline, so a configuration may name a schedule
 * before it exists. Flip `built` to 1 when a schedule's emitter lands. */
static const struct Schedule {
  const char *name;
  int route;
  const char *enumerator;
  int built;
} schedule_table[] = {
    {"generic", 0, "GDN_ROUTE_GENERIC", 1},
    {"register_replay", 1, "GDN_ROUTE_REGISTER_REPLAY", 0},
    {"predecessor_replay", 2, "GDN_ROUTE_PREDECESSOR_REPLAY", 0},
};

/* The key fields, in RouteField order. The ranges are the runtime's own
 * limits (runtime/check.c: the grid carries heads and sequences, T stays
 * below 2^31 - 64): a key outside them could never be looked up. */
static const struct KeyField {
  const char *name;     /* in the config and in the emitted struct */
  long long lo, hi;
  const char *header;   /* --list column */
} key_fields[] = {
    [RF_T] = {"T", 1, INT32_MAX - 64, "T"},
    [RF_N] = {"N", 1, 65535, "N"},
    [RF_HQ] = {"Hq", 1, 65535, "Hq"},
    [RF_HK] = {"Hk", 1, 65535, "Hk"},
    [RF_HV] = {"Hv", 1, 65535, "Hv"},
    [RF_INIT] = {"init", 0, 1, "init"},
    [RF_FINAL] = {"final", 0, 1, "final"},
};
_Static_assert(COUNT_OF(key_fields) == RF_COUNT, "one row per RouteField");

#define LINE_MAX_CHARS 1024

void routes_init(RouteTable *t) { memset(t, 0, sizeof *t); }

void routes_free(RouteTable *t) {
  free(t->rows);
  memset(t, 0, sizeof *t);
}

static int schedule_count(void) { return (int)COUNT_OF(schedule_table); }
static const char *schedule_name(int i) { return schedule_table[i].name; }

/* ------------------------------------------------------------ parsing */
/* The next whitespace-separated token of *p, or NULL at the end. */
static const char *next_token(const char **p, int *len) {
  const char *s = *p;
  while (*s && isspace((unsigned char)*s))
    s++;
  if (!*s)
    return NULL;
  const char *e = s;
  while (*e && !isspace((unsigned char)*e))
    e++;
  *len = (int)(e - s);
  *p = e;
  return s;
}

static int find_schedule(const char *s, int len) {
  for (int i = 0; i < (int)COUNT_OF(schedule_table); i++)
    if ((int)strlen(schedule_table[i].name) == len && !strncmp(s, schedule_table[i].name, len))
      return i;
  return -1;
}

static int find_field(const char *s, int len) {
  for (int i = 0; i < RF_COUNT; i++)
    if ((int)strlen(key_fields[i].name) == len && !strncmp(s, key_fields[i].name, len))
      return i;
  return -1;
}

/* "a, b, c" from a table of names, for the messages that list what is known. */
static void join_names(char *buf, size_t n, int count, const char *(*name)(int)) {
  buf[0] = '\0';
  for (int i = 0; i < count; i++)
    snprintf(buf + strlen(buf), n - strlen(buf), "%s%s", i ? ", " : "", name(i));
}

static const char *field_name(int i) { return key_fields[i].name; }

/* One NAME=VALUE token into row->key; `given` marks the fields seen. */
static int parse_field(const char *tok, int len, RouteRow *row, int *given, const char *where,
                       Diag *d) {
  const char *eq = memchr(tok, '=', (size_t)len);
  char known[128];
  join_names(known, sizeof known, RF_COUNT, field_name);
  if (!eq)
    return diag_fail(d, "%s: '%.*s' is not NAME=VALUE (fields: %s)", where, len, tok, known);
  int f = find_field(tok, (int)(eq - tok));
  if (f < 0)
    return diag_fail(d, "%s: unknown field '%.*s' (fields: %s)", where, (int)(eq - tok), tok,
                     known);
  if (given[f])
    return diag_fail(d, "%s: field %s given twice", where, key_fields[f].name);
  char val[32];
  int vlen = len - (int)(eq + 1 - tok);
  if (vlen <= 0 || vlen >= (int)sizeof val)
    return diag_fail(d, "%s: %.*s: the value is not an integer of at most %d digits", where, len,
                     tok, (int)sizeof val - 1);
  memcpy(val, eq + 1, (size_t)vlen);
  val[vlen] = '\0';
  char *end;
  errno = 0;
  long long v = strtoll(val, &end, 10);
  if (*end || !(isdigit((unsigned char)val[0]) || val[0] == '-'))
    return diag_fail(d, "%s: %s=%s: the value is not an integer", where, key_fields[f].name, val);
  if (errno == ERANGE || v < key_fields[f].lo || v > key_fields[f].hi)
    return diag_fail(d, "%s: %s=%s is out of range (%lld .. %lld)", where, key_fields[f].name,
                     val, key_fields[f].lo, key_fields[f].hi);
  row->key[f] = v;
  given[f] = 1;
  return 0;
}

/* The rules that join fields, as runtime/check.c applies them to a call. */
static int check_key(const RouteRow *row, const char *where, Diag *d) {
  const int64_t *k = row->key;
  if (k[RF_N] > k[RF_T])
    return diag_fail(d, "%s: N=%" PRId64 " > T=%" PRId64 ": every sequence needs at least one "
                     "token (1 <= N <= T)", where, k[RF_N], k[RF_T]);
  int64_t q = k[RF_HQ], h = k[RF_HK], v = k[RF_HV];
  int mha = q == h && h == v, gqa = h == v && q % h == 0, gva = q == h && v % q == 0;
  if (!(mha || gqa || gva))
    return diag_fail(d, "%s: heads Hq=%" PRId64 " Hk=%" PRId64 " Hv=%" PRId64 " are not MHA "
                     "(all equal), GQA (Hk = Hv, Hq a multiple of Hk) or GVA (Hq = Hk, Hv a "
                     "multiple of Hq)", where, q, h, v);
  return 0;
}

/* One row from text (comments already removed): 1 if the text is blank. */
static int parse_row(const char *text, const char *where, RouteRow *row, Diag *d) {
  const char *p = text;
  int len;
  const char *tok = next_token(&p, &len);
  if (!tok)
    return 1;
  memset(row, 0, sizeof *row);
  row->schedule = find_schedule(tok, len);
  if (row->schedule < 0) {
    char known[128];
    join_names(known, sizeof known, schedule_count(), schedule_name);
    return diag_fail(d, "%s: unknown schedule '%.*s' (known: %s)", where, len, tok, known);
  }
  int given[RF_COUNT] = {0};
  while ((tok = next_token(&p, &len)) != NULL)
    if (parse_field(tok, len, row, given, where, d))
      return -1;
  for (int f = 0; f < RF_COUNT; f++)
    if (!given[f]) {
      char known[128];
      join_names(known, sizeof known, RF_COUNT, field_name);
      return diag_fail(d, "%s: missing field %s (every row gives %s)", where, key_fields[f].name,
                       known);
    }
  return check_key(row, where, d);
}

static const RouteRow *find_key(const RouteTable *t, const RouteRow *row) {
  for (int i = 0; i < t->n; i++)
    if (!memcmp(t->rows[i].key, row->key, sizeof row->key))
      return &t->rows[i];
  return NULL;
}

/* Appends a checked row. The same key twice with the same schedule is kept
 * once (a --route may repeat a file's row); with another schedule it is a
 * contradiction the user must resolve. */
static int append_row(RouteTable *t, const RouteRow *row, const char *where, Diag *d) {
  const RouteRow *old = find_key(t, row);
  if (old && old->schedule != row->schedule)
    return diag_fail(d, "%s: this key is already routed to %s by %s", where,
                     schedule_table[old->schedule].name, old->origin);
  if (old)
    return 0;
  if (t->n == t->cap) {
    int cap = t->cap ? 2 * t->cap : 16;
    RouteRow *r = realloc(t->rows, (size_t)cap * sizeof *r);
    if (!r)
      return diag_fail(d, "out of memory");
    t->rows = r;
    t->cap = cap;
  }
  t->rows[t->n++] = *row;
  return 0;
}

static int add_text(RouteTable *t, const char *text, const char *where, const char *origin,
                    Diag *d) {
  RouteRow row;
  int rc = parse_row(text, where, &row, d);
  if (rc)
    return rc > 0 ? 0 : -1;
  snprintf(row.origin, sizeof row.origin, "%s", origin);
  return append_row(t, &row, where, d);
}

int routes_add(RouteTable *t, const char *spec, const char *where, Diag *d) {
  const char *p = spec;
  int len;
  if (!next_token(&p, &len))
    return diag_fail(d, "%s: the route is empty (want 'SCHEDULE T=.. N=.. Hq=.. Hk=.. Hv=.. "
                     "init=0|1 final=0|1')", where);
  return add_text(t, spec, where, where, d);
}

/* Rows keep the file's base name and line as their origin: the emitted
 * header must not depend on how the path was spelled. */
int routes_load(RouteTable *t, const char *path, Diag *d) {
  FILE *f = fopen(path, "r");
  if (!f)
    return diag_fail(d, "cannot read route config %s: %s (give one with --config FILE)", path,
                     strerror(errno));
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  char line[LINE_MAX_CHARS];
  int rc = 0;
  for (int no = 1; rc == 0 && fgets(line, sizeof line, f); no++) {
    char where[LINE_MAX_CHARS / 4], origin[ROUTE_ORIGIN_LEN];
    snprintf(where, sizeof where, "%s:%d", path, no);
    snprintf(origin, sizeof origin, "%s:%d", base, no);
    size_t n = strlen(line);
    if (n == sizeof line - 1 && line[n - 1] != '\n' && !feof(f)) {
      rc = diag_fail(d, "%s: line longer than %d characters", where, LINE_MAX_CHARS - 2);
      break;
    }
    char *hash = strchr(line, '#');
    if (hash)
      *hash = '\0';
    rc = add_text(t, line, where, origin, d);
  }
  if (rc == 0 && ferror(f))
    rc = diag_fail(d, "cannot read route config %s: %s", path, strerror(errno));
  fclose(f);
  return rc;
}

/* ------------------------------------------------------------- output */
static const char *yes_no(int64_t v) { return v ? "yes" : "no"; }

void routes_print(const RouteTable *t, FILE *f) {
  fprintf(f, "%-18s %10s %5s %5s %5s %5s %4s %5s %5s  %s\n", "schedule", "T", "N", "Hq", "Hk",
          "Hv", "init", "final", "built", "from");
  for (int i = 0; i < t->n; i++) {
    const RouteRow *r = &t->rows[i];
    const int64_t *k = r->key;
    fprintf(f, "%-18s %10" PRId64 " %5" PRId64 " %5" PRId64 " %5" PRId64 " %5" PRId64
               " %4s %5s %5s  %s\n",
            schedule_table[r->schedule].name, k[RF_T], k[RF_N], k[RF_HQ], k[RF_HK], k[RF_HV],
            yes_no(k[RF_INIT]), yes_no(k[RF_FINAL]), yes_no(schedule_table[r->schedule].built),
            r->origin);
  }
  if (t->n == 0)
    fprintf(f, "(no rows: every call takes the generic pipeline)\n");
  fprintf(f, "A call matches a row when its key is exactly the row's and alpha and beta are\n"
             "given; a row whose schedule is not built takes the generic pipeline.\n");
}

static void emit_types(Out *o) {
  outf(o, "typedef struct gdn_route_key {\n");
  outf(o, "  int64_t T;\n  int32_t N, Hq, Hk, Hv;\n");
  outf(o, "  int32_t init;   /* 1: initial_state given */\n");
  outf(o, "  int32_t final;  /* 1: final_state wanted */\n");
  outf(o, "  gdn_route route;\n");
  outf(o, "  int32_t built;  /* 1: this build emitted the schedule's kernels */\n");
  outf(o, "} gdn_route_key;\n\n");
  outf(o, "// The gdn_route values gdngen wrote the rows with.\n");
  for (size_t i = 0; i < COUNT_OF(schedule_table); i++)
    outf(o, "_Static_assert(%s == %d, \"gdngen's schedule table and gdn.h disagree\");\n",
         schedule_table[i].enumerator, schedule_table[i].route);
}

static void emit_row(Out *o, const RouteRow *r) {
  const int64_t *k = r->key;
  const struct Schedule *s = &schedule_table[r->schedule];
  outf(o, "  {.T = %" PRId64 ", .N = %" PRId64 ", .Hq = %" PRId64 ", .Hk = %" PRId64
          ", .Hv = %" PRId64 ", .init = %" PRId64 ", .final = %" PRId64 ",\n",
       k[RF_T], k[RF_N], k[RF_HQ], k[RF_HK], k[RF_HV], k[RF_INIT], k[RF_FINAL]);
  outf(o, "   .route = %s, .built = %d}, // %s\n", s->enumerator, s->built, r->origin);
}

/* C has no empty array: with no rows the table holds one placeholder that
 * no valid call can match (head counts 0), and GDN_ROUTE_ROWS is 0. */
static void emit_table(Out *o, const RouteTable *t) {
  outf(o, "\n// Rows in configuration order; a lookup scans GDN_ROUTE_ROWS of them.\n");
  outf(o, "#define GDN_ROUTE_ROWS %d\n", t->n);
  outf(o, "static const gdn_route_key gdn_route_table[] = {\n");
  for (int i = 0; i < t->n; i++)
    emit_row(o, &t->rows[i]);
  if (t->n == 0)
    outf(o, "  {.route = GDN_ROUTE_GENERIC}, // placeholder: no rows\n");
  outf(o, "};\n");
}

int routes_emit(const RouteTable *t, const char *out_dir, ArchId arch, Diag *d) {
  Out o;
  out_init(&o);
  gen_header(&o, "gdn_routes.h: which exact call keys take which schedule.", arch, "//");
  outf(&o, "// The rows are gdngen's route configuration (generator/default.routes,\n");
  outf(&o, "// --config, --route; see docs/routes.md). runtime/route.c looks a call up\n");
  outf(&o, "// here; a row whose schedule is not built takes the generic pipeline.\n");
  outf(&o, "#ifndef GDN_ROUTES_H\n#define GDN_ROUTES_H\n\n#include <stdint.h>\n\n");
  outf(&o, "#include \"gdn.h\"\n\n");
  emit_types(&o);
  emit_table(&o, t);
  outf(&o, "\n#endif\n");
  char *path = path_join(out_dir, "gdn_routes.h");
  int rc = out_write_file(&o, path, d);
  free(path);
  out_free(&o);
  return rc;
}
