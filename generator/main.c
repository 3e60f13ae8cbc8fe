/* main.c: the gdngen command line. The pipeline is a straight list of
 * calls: check the configuration, load the route table, emit probes, emit
 * the GDN schedules and the route table, write build.ninja. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

/* The values of a repeatable option, in command-line order. */
typedef struct StrList {
  const char **v; /* room for argc entries: no option appears more often */
  int n;
} StrList;

typedef struct Options {
  const char *out_dir, *tmpl_dir, *target, *dtype, *only, *config;
  int head_dim, quiet, list;
  StrList routes;
} Options;

typedef enum { OPT_STR, OPT_INT, OPT_FLAG, OPT_LIST } OptType;

static const struct OptionRow {
  const char *name;
  OptType type;
  size_t field;
  const char *arg, *help;
} option_table[] = {
    {"--out", OPT_STR, offsetof(Options, out_dir), "DIR",
     "write generated sources into DIR (default: generated)"},
    {"--templates", OPT_STR, offsetof(Options, tmpl_dir), "DIR",
     "read kernel skeletons from DIR (default: templates)"},
    {"--target", OPT_STR, offsetof(Options, target), "ARCH",
     "GPU architecture; only sm_90a has wgmma (default: sm_90a)"},
    {"--dtype", OPT_STR, offsetof(Options, dtype), "TYPE",
     "q, k, v and o element type; bf16 (default: bf16)"},
    {"--head-dim", OPT_INT, offsetof(Options, head_dim), "N",
     "head dimension of q, k and v; 128 (default: 128)"},
    {"--only", OPT_STR, offsetof(Options, only), "WHAT",
     "emit only 'probes' or 'gdn' (default: both)"},
    {"--config", OPT_STR, offsetof(Options, config), "FILE",
     "read the route table from FILE (default: generator/default.routes)"},
    {"--route", OPT_LIST, offsetof(Options, routes), "ROW",
     "add a route row after FILE's, written as a line of FILE (repeatable)"},
    {"--list", OPT_FLAG, offsetof(Options, list), NULL,
     "print the route table and exit, writing nothing"},
    {"--quiet", OPT_FLAG, offsetof(Options, quiet), NULL, "print nothing but errors"},
};

static void usage(FILE *f) {
  fprintf(f, "usage: gdngen [options]\n"
             "       gdngen embed OUT.c FILE...\n"
             "       gdngen resources OUT.md LOG...\n\n"
             "Emits the Gated Delta Net prefill kernels (CUDA with inline PTX) for one\n"
             "target, the probe kernels that prove the lowering rules, the route table\n"
             "that sends exact call shapes to specialised schedules (docs/routes.md),\n"
             "and a build.ninja that compiles the kernels. `embed` writes files as C\n"
             "arrays; `resources` tabulates ptxas -v logs and fails on spills or stack.\n\n"
             "options:\n");
  for (size_t i = 0; i < COUNT_OF(option_table); i++) {
    char left[48];
    snprintf(left, sizeof left, "%s%s%s", option_table[i].name, option_table[i].arg ? " " : "",
             option_table[i].arg ? option_table[i].arg : "");
    fprintf(f, "  %-20s %s\n", left, option_table[i].help);
  }
  fprintf(f, "  %-20s %s\n  %-20s %s\n", "--help", "print this help", "--version",
          "print the version");
}

static int set_option(Options *o, const struct OptionRow *r, const char *val) {
  char *field = (char *)o + r->field;
  if (r->type == OPT_FLAG) {
    *(int *)field = 1;
    return 0;
  }
  if (!val) {
    fprintf(stderr, "gdngen: %s needs a value (%s)\n", r->name, r->arg);
    return -1;
  }
  if (r->type == OPT_STR) {
    *(const char **)field = val;
    return 0;
  }
  if (r->type == OPT_LIST) {
    StrList *l = (StrList *)field;
    l->v[l->n++] = val;
    return 0;
  }
  char *end;
  long v = strtol(val, &end, 10);
  if (*end || end == val || v < INT_MIN || v > INT_MAX) {
    fprintf(stderr, "gdngen: %s wants an integer, not '%s'\n", r->name, val);
    return -1;
  }
  *(int *)field = (int)v;
  return 0;
}

/* Returns 0 to go on, 1 to stop with success, -1 on error. */
static int parse_args(int argc, char **argv, Options *o) {
  *o = (Options){.out_dir = "generated", .tmpl_dir = "templates", .target = "sm_90a",
                 .dtype = "bf16", .only = "all", .config = "generator/default.routes",
                 .head_dim = 128};
  o->routes.v = malloc((size_t)argc * sizeof *o->routes.v);
  if (!o->routes.v) {
    fprintf(stderr, "gdngen: out of memory\n");
    return -1;
  }
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 1;
    }
    if (!strcmp(argv[i], "--version")) {
      printf("gdngen %s\n", GDNGEN_VERSION);
      return 1;
    }
    size_t j = 0;
    while (j < COUNT_OF(option_table) && strcmp(argv[i], option_table[j].name))
      j++;
    if (j == COUNT_OF(option_table)) {
      fprintf(stderr, "gdngen: unknown option '%s' (see gdngen --help)\n", argv[i]);
      return -1;
    }
    const char *val = NULL;
    if (option_table[j].type != OPT_FLAG && i + 1 < argc)
      val = argv[++i];
    if (set_option(o, &option_table[j], val) != 0)
      return -1;
  }
  return 0;
}

/* The problem description gdngen can serve: checked before anything is
 * written, each refusal naming what would be needed. */
static int check_options(const Options *o, ArchId *arch) {
  if (arch_parse(o->target, arch) != 0) {
    fprintf(stderr, "gdngen: unknown target '%s' (known: sm_80, sm_90, sm_90a, sm_100a)\n", o->target);
    return -1;
  }
  if (!arch_info(*arch)->wgmma) {
    fprintf(stderr, "gdngen: target %s is not supported: the kernels need wgmma, which only sm_90a has\n",
            o->target);
    return -1;
  }
  DType dt;
  if (dtype_parse(o->dtype, &dt) != 0 || dt != DT_BF16) {
    fprintf(stderr, "gdngen: dtype '%s' is not supported: q, k, v and o are bf16\n", o->dtype);
    return -1;
  }
  if (o->head_dim != 128) {
    fprintf(stderr, "gdngen: head dimension %d is not supported: it must be 128\n", o->head_dim);
    return -1;
  }
  if (strcmp(o->only, "all") && strcmp(o->only, "probes") && strcmp(o->only, "gdn")) {
    fprintf(stderr, "gdngen: --only wants 'probes' or 'gdn', not '%s'\n", o->only);
    return -1;
  }
  return 0;
}

static const KernelFile kernel_files[] = {
    {"gdn_generic", 1}, {"probes_ss", 0}, {"probes_rs", 0}, {"probes_misc", 0},
    {"probe_step", 0},
};

/* The route table: the config file's rows, then each --route in order.
 * Loaded before anything is written, so a bad row leaves no file behind. */
static int load_routes(const Options *o, RouteTable *t) {
  Diag d = {{0}};
  int rc = routes_load(t, o->config, &d);
  for (int i = 0; rc == 0 && i < o->routes.n; i++) {
    char where[32];
    snprintf(where, sizeof where, "--route #%d", i + 1);
    rc = routes_add(t, o->routes.v[i], where, &d);
  }
  if (rc)
    fprintf(stderr, "gdngen: %s\n", d.msg);
  return rc;
}

static int run(const Options *o, ArchId arch, const RouteTable *routes) {
  Diag d = {{0}};
  int all = !strcmp(o->only, "all");
  if ((all || !strcmp(o->only, "probes")) && probe_emit(o->tmpl_dir, o->out_dir, arch, &d)) {
    fprintf(stderr, "gdngen: %s\n", d.msg);
    return 1;
  }
  if ((all || !strcmp(o->only, "gdn")) && (generic_emit(o->tmpl_dir, o->out_dir, arch, &d) ||
                                            routes_emit(routes, o->out_dir, arch, &d))) {
    fprintf(stderr, "gdngen: %s\n", d.msg);
    return 1;
  }
  if (ninja_emit(o->out_dir, arch, kernel_files, (int)COUNT_OF(kernel_files), &d)) {
    fprintf(stderr, "gdngen: %s\n", d.msg);
    return 1;
  }
  if (!o->quiet)
    printf("gdngen: wrote %s/ for %s\n", o->out_dir, arch_info(arch)->name);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "embed")) {
    if (argc < 3) {
      fprintf(stderr, "gdngen: usage: gdngen embed OUT.c FILE...\n");
      return 2;
    }
    Diag d = {{0}};
    if (embed_files(argv[2], argc - 3, argv + 3, &d)) {
      fprintf(stderr, "gdngen: %s\n", d.msg);
      return 1;
    }
    return 0;
  }
  if (argc >= 2 && !strcmp(argv[1], "resources")) {
    if (argc < 4) {
      fprintf(stderr, "gdngen: usage: gdngen resources OUT.md LOG...\n");
      return 2;
    }
    Diag d = {{0}};
    if (resources_report(argv[2], argc - 3, argv + 3, &d)) {
      fprintf(stderr, "gdngen: %s\n", d.msg);
      return 1;
    }
    return 0;
  }
  Options o;
  int rc = parse_args(argc, argv, &o);
  ArchId arch;
  RouteTable routes;
  routes_init(&routes);
  if (rc)
    rc = rc > 0 ? 0 : 2;
  else if (check_options(&o, &arch) || load_routes(&o, &routes))
    rc = 2;
  else if (o.list)
    routes_print(&routes, stdout);
  else
    rc = run(&o, arch, &routes);
  routes_free(&routes);
  free(o.routes.v);
  return rc;
}
