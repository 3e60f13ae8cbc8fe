/* ninja.c: the build.ninja that compiles what gdngen emitted, and the
 * embedder that turns cubins and sources into a C file for libgdn.
 *
 * Paths in build.ninja are relative to the repository root (`ninja -f
 * generated/build.ninja`). Each .cu becomes one cubin; ptxas -v output is
 * kept beside it in build/ptxas/<stem>.log for the codegen check.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gdngen.h"

int ninja_emit(const char *out_dir, ArchId arch, const KernelFile *files, int n, Diag *d) {
  Out o;
  out_init(&o);
  gen_header(&o, "build.ninja: compiles the emitted kernels (run from the repository root).",
             arch, "#");
  outf(&o, "\nbuilddir = build\nnvcc = nvcc\ngdngen = build/gdngen\n");
  outf(&o, "cuflags = %s -std=c++17 -O3 -Xptxas -v -Xptxas -warn-spills -Xptxas -warn-lmem-usage\n\n",
       arch_info(arch)->gencode);
  outf(&o, "rule cubin\n");
  outf(&o, "  command = $nvcc $cuflags -cubin -o $out $in > $log 2>&1 || { cat $log; exit 1; }\n");
  outf(&o, "  description = nvcc $in\n\n");
  outf(&o, "rule embed\n  command = $gdngen embed $out $in\n  description = embed $out\n\n");
  Out embed_in;
  out_init(&embed_in);
  for (int i = 0; i < n; i++) {
    outf(&o, "build build/kernels/%s.cubin: cubin %s/%s.cu\n", files[i].stem, out_dir,
         files[i].stem);
    outf(&o, "  log = build/ptxas/%s.log\n", files[i].stem);
    if (files[i].embed)
      outf(&embed_in, " build/kernels/%s.cubin %s/%s.cu", files[i].stem, out_dir, files[i].stem);
  }
  outf(&o, "\nbuild build/kernels/embedded.c: embed%s | $gdngen\n", embed_in.buf ? embed_in.buf : "");
  outf(&o, "\ndefault build/kernels/embedded.c");
  for (int i = 0; i < n; i++)
    if (!files[i].embed)
      outf(&o, " build/kernels/%s.cubin", files[i].stem);
  outf(&o, "\n");
  char *path = path_join(out_dir, "build.ninja");
  int rc = out_write_file(&o, path, d);
  free(path);
  out_free(&o);
  out_free(&embed_in);
  return rc;
}

/* "build/kernels/probes_ss.cubin" -> "probes_ss_cubin" */
static void symbol_of(const char *path, char *sym, size_t n) {
  const char *b = strrchr(path, '/');
  b = b ? b + 1 : path;
  size_t i = 0;
  for (; b[i] && i + 1 < n; i++)
    sym[i] = (b[i] == '.' || b[i] == '-') ? '_' : b[i];
  sym[i] = '\0';
}

/* One file as a C array. The bytes of CUDA sources also go into `id`
 * (FNV-1a, 64 bits): the build id names the kernels' code, whichever nvcc
 * compiled it. */
static int embed_one(Out *o, const char *path, char *sym, size_t symn, size_t *len,
                     uint64_t *id, Diag *d) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return diag_fail(d, "embed: cannot read %s: %s", path, strerror(errno));
  symbol_of(path, sym, symn);
  size_t pl = strlen(path);
  int source = pl > 3 && !strcmp(path + pl - 3, ".cu");
  outf(o, "static const unsigned char %s[] = {", sym);
  int c;
  *len = 0;
  while ((c = fgetc(f)) != EOF) {
    outf(o, "%s%d,", *len % 24 == 0 ? "\n  " : "", c);
    (*len)++;
    if (source)
      *id = (*id ^ (uint64_t)c) * 1099511628211ull;
  }
  outf(o, "%s0};\n\n", *len % 24 == 0 ? "\n  " : ""); /* NUL-terminated: sources are strings */
  fclose(f);
  return 0;
}

/* The embedded blobs, and a table the runtime looks them up in by name. */
int embed_files(const char *out_c, int nfiles, char **files, Diag *d) {
  Out o, table;
  out_init(&o);
  out_init(&table);
  outf(&o, "// embedded.c: cubins and CUDA sources of the kernels, for libgdn.\n");
  outf(&o, "// Written by `gdngen embed`; a build product, not committed.\n");
  outf(&o, "#include <stddef.h>\n\n#include \"embedded.h\"\n\n");
  int rc = 0;
  uint64_t id = 14695981039346656037ull;
  for (int i = 0; i < nfiles && rc == 0; i++) {
    char sym[128];
    size_t len = 0;
    rc = embed_one(&o, files[i], sym, sizeof sym, &len, &id, d);
    const char *b = strrchr(files[i], '/');
    outf(&table, "  {\"%s\", %s, %zu},\n", b ? b + 1 : files[i], sym, len);
  }
  outf(&o, "const gdn_blob gdn_blobs[] = {\n");
  out_append(&o, &table);
  outf(&o, "  {NULL, NULL, 0},\n};\n\n");
  outf(&o, "const char gdn_build_id[] = \"gdngen %s, kernels %016llx\";\n", GDNGEN_VERSION,
       (unsigned long long)id);
  if (rc == 0)
    rc = out_write_file(&o, out_c, d);
  out_free(&o);
  out_free(&table);
  return rc;
}
