/* nvrtc.c: compiles the embedded CUDA source for the current device with
 * NVRTC, for when the embedded cubins cannot be loaded (or the caller asks
 * for it). libnvrtc is opened at run time, so libgdn loads and works from
 * its cubins on a machine without it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The few NVRTC entry points used, by name; the types mirror nvrtc.h. */
typedef int (*CreateFn)(void **, const char *, const char *, int, const char *const *,
                        const char *const *);
typedef int (*CompileFn)(void *, int, const char *const *);
typedef int (*SizeFn)(void *, size_t *);
typedef int (*GetFn)(void *, char *);
typedef int (*DestroyFn)(void **);

typedef struct Nvrtc {
  void *lib;
  CreateFn create;
  CompileFn compile;
  SizeFn log_size, cubin_size;
  GetFn log, cubin;
  DestroyFn destroy;
} Nvrtc;

static void *open_nvrtc(void) {
  static const char *const names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    void *lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (lib)
      return lib;
  }
  const char *home = getenv("CUDA_HOME");
  char path[512];
  snprintf(path, sizeof path, "%s/lib64/libnvrtc.so", home ? home : "/usr/local/cuda");
  return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static int load_nvrtc(Nvrtc *n) {
  memset(n, 0, sizeof *n);
  if (!(n->lib = open_nvrtc()))
    return -1;
  n->create = (CreateFn)dlsym(n->lib, "nvrtcCreateProgram");
  n->compile = (CompileFn)dlsym(n->lib, "nvrtcCompileProgram");
  n->log_size = (SizeFn)dlsym(n->lib, "nvrtcGetProgramLogSize");
  n->log = (GetFn)dlsym(n->lib, "nvrtcGetProgramLog");
  n->cubin_size = (SizeFn)dlsym(n->lib, "nvrtcGetCUBINSize");
  n->cubin = (GetFn)dlsym(n->lib, "nvrtcGetCUBIN");
  n->destroy = (DestroyFn)dlsym(n->lib, "nvrtcDestroyProgram");
  int ok = n->create && n->compile && n->log_size && n->log && n->cubin_size && n->cubin &&
           n->destroy;
  if (!ok)
    dlclose(n->lib);
  return ok ? 0 : -1;
}

/* The compiler's first complaint, for the handle's error message. */
static void first_log_line(Nvrtc *n, void *prog, char *buf, size_t len) {
  size_t sz = 0;
  buf[0] = '\0';
  if (n->log_size(prog, &sz) != 0 || sz == 0)
    return;
  char *log = malloc(sz + 1);
  if (log && n->log(prog, log) == 0) {
    log[sz] = '\0';
    snprintf(buf, len, "%.*s", (int)strcspn(log, "\n"), log);
  }
  free(log);
}

#define STR_(x) #x
#define STR(x) STR_(x)

gdn_status gdn_nvrtc_module(gdn_handle *h, const char *name, const char *src, int trace,
                            CUmodule *mod) {
  int major = 0, minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, h->dev);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, h->dev);
  if (major != 9 || minor != 0)
    return gdn_fail(h, GDN_ERR_NO_KERNEL,
                    "device %d is sm_%d%d; the kernels use wgmma, which only sm_90a has",
                    (int)h->dev, major, minor);
  Nvrtc n;
  if (load_nvrtc(&n) != 0)
    return gdn_fail(h, GDN_ERR_NO_KERNEL, "NVRTC (libnvrtc.so) could not be opened");
  void *prog = NULL;
  /* The first two always; the rest in the trace build only. */
  const char *opts[] = {"-arch=sm_90a", "-std=c++17", "-DGDN_TRACE",
                        "-DGDN_TRACE_CTAS=" STR(GDN_TRACE_CTAS),
                        "-DGDN_TRACE_ROWS=" STR(GDN_TRACE_ROWS),
                        "-DGDN_TRACE_UNITS=" STR(GDN_TRACE_UNITS),
                        "-DGDN_TRACE_STEPS=" STR(GDN_TRACE_STEPS)};
  gdn_status s = GDN_OK;
  char why[256];
  if (n.create(&prog, src, name, 0, NULL, NULL) != 0) {
    s = gdn_fail(h, GDN_ERR_NO_KERNEL, "nvrtcCreateProgram failed for %s", name);
  } else if (n.compile(prog, trace ? (int)(sizeof opts / sizeof *opts) : 2, opts) != 0) {
    first_log_line(&n, prog, why, sizeof why);
    s = gdn_fail(h, GDN_ERR_NO_KERNEL, "NVRTC could not compile %s: %s", name, why);
  } else {
    size_t sz = 0;
    char *cubin = NULL;
    if (n.cubin_size(prog, &sz) == 0 && (cubin = malloc(sz)) && n.cubin(prog, cubin) == 0) {
      CUresult r = cuModuleLoadData(mod, cubin);
      if (r != CUDA_SUCCESS)
        s = gdn_cu_fail(h, r, "cuModuleLoadData (NVRTC cubin)");
    } else {
      s = gdn_fail(h, GDN_ERR_NO_KERNEL, "NVRTC produced no cubin for %s", name);
    }
    free(cubin);
  }
  if (prog)
    n.destroy(&prog);
  dlclose(n.lib);
  return s;
}
