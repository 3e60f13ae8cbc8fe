/* embedded.h: the kernels built into libgdn (build/kernels/embedded.c,
 * written by `gdngen embed`): each cubin, and the CUDA source it was
 * compiled from for NVRTC. The table ends with a NULL name. */
#ifndef GDN_EMBEDDED_H
#define GDN_EMBEDDED_H

#include <stddef.h>

typedef struct gdn_blob {
  const char *name;           /* "gdn_generic.cubin", "gdn_generic.cu" */
  const unsigned char *data;  /* NUL-terminated, size excludes the NUL */
  size_t size;
} gdn_blob;

extern const gdn_blob gdn_blobs[];

/* "gdngen VERSION, kernels HASH": HASH is FNV-1a (64 bits) of the embedded
 * CUDA sources, so two builds with the same kernels report the same id. */
extern const char gdn_build_id[];

#endif
