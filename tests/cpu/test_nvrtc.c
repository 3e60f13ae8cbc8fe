/* test_nvrtc.c: every emitted kernel file compiles through NVRTC for
 * sm_90a, with no warning, into a cubin that holds each of its kernels.
 * This is the runtime's fallback path (runtime/nvrtc.c), checked without a
 * GPU. The files are the ones generated/build.ninja compiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <nvrtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *buf = malloc((size_t)n + 1);
  *len = fread(buf, 1, (size_t)n, f);
  buf[*len] = '\0';
  fclose(f);
  return buf;
}

static int contains(const char *hay, size_t n, const char *needle) {
  size_t m = strlen(needle);
  for (size_t i = 0; i + m <= n; i++)
    if (memcmp(hay + i, needle, m) == 0)
      return 1;
  return 0;
}

/* Kernel names are the `extern "C" ... NAME(` entries of the source. */
static void check_kernels_in(const char *src, const char *cubin, size_t n, const char *file) {
  int found = 0;
  for (const char *p = strstr(src, "extern \"C\""); p; p = strstr(p + 1, "extern \"C\"")) {
    const char *nl = strchr(p, '\n');
    if (!nl)
      break;
    char name[128];
    if (sscanf(nl + 1, "%127[A-Za-z0-9_]", name) != 1)
      continue;
    if (!contains(cubin, n, name))
      fail_msg("%s: kernel %s is not in the NVRTC cubin", file, name);
    found++;
  }
  if (found == 0)
    fail_msg("%s: no kernel found in the source", file);
}

static void compile_one(const char *file) {
  size_t len;
  char *src = slurp(file, &len);
  if (!src)
    fail_msg("cannot read %s", file);
  nvrtcProgram prog;
  assert_int_equal(nvrtcCreateProgram(&prog, src, file, 0, NULL, NULL), NVRTC_SUCCESS);
  const char *opts[] = {"-arch=sm_90a", "-std=c++17"};
  nvrtcResult r = nvrtcCompileProgram(prog, 2, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  char *log = malloc(log_size + 1);
  nvrtcGetProgramLog(prog, log);
  log[log_size] = '\0';
  if (r != NVRTC_SUCCESS || strlen(log) > 0)
    fail_msg("%s: %s\n%s", file, nvrtcGetErrorString(r), log);
  size_t n = 0;
  assert_int_equal(nvrtcGetCUBINSize(prog, &n), NVRTC_SUCCESS);
  char *cubin = malloc(n);
  assert_int_equal(nvrtcGetCUBIN(prog, cubin), NVRTC_SUCCESS);
  check_kernels_in(src, cubin, n, file);
  printf("  %s: %zu-byte cubin\n", file, n);
  free(cubin);
  free(log);
  free(src);
  nvrtcDestroyProgram(&prog);
}

static void test_every_emitted_file(void **state) {
  (void)state;
  size_t len;
  char *ninja = slurp("generated/build.ninja", &len);
  assert_non_null(ninja);
  int files = 0;
  for (char *p = strstr(ninja, ": cubin "); p; p = strstr(p + 1, ": cubin ")) {
    char path[256];
    if (sscanf(p + 8, "%255s", path) == 1) {
      compile_one(path);
      files++;
    }
  }
  assert_true(files >= 2);
  free(ninja);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_emitted_file)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
