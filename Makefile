# gdngen: `make` builds the generator, emits the kernels for the default
# target into generated/, compiles them through the build.ninja gdngen
# writes, and links libgdn. `make test` runs the CPU tests (no GPU needed).
# `make gpu-test` builds the GPU tests; `make gpu-check` runs them (H200).

CC      ?= cc
CFLAGS  ?= -O2
CFLAGS  += -std=c11 -Wall -Wextra -Werror
CUDA    ?= /usr/local/cuda
B       := build
GEN_SRC := $(wildcard generator/*.c)
GEN_HDR := generator/gdngen.h
RULES   := generator/target.c generator/smem.c generator/tma.c generator/util.c
REF_SRC := tests/ref/numeric.c tests/ref/recurrence.c tests/ref/staged.c tests/ref/segments.c \
           tests/ref/wu.c
CUDA_INC := -I$(CUDA)/include
CUDA_LIB := -L$(CUDA)/lib64/stubs -lcuda

RT_SRC  := $(wildcard runtime/*.c)
RT_HDR  := runtime/gdn.h runtime/internal.h runtime/embedded.h generated/gdn_kernels.h generated/gdn_routes.h
RT_OBJ  := $(patsubst runtime/%.c,$(B)/rt/%.o,$(RT_SRC)) $(B)/rt/embedded.o

.PHONY: all generate kernels lib test check-codegen fuzz gpu-test gpu-check gpu-safety sanitize \
        gpu-check-multi install uninstall clean

all: lib

$(B)/gdngen: $(GEN_SRC) $(GEN_HDR)
	@mkdir -p $(B)
	$(CC) $(CFLAGS) -o $@ $(GEN_SRC)

# The generator decides what exists; ninja rebuilds only what changed.
generate: $(B)/gdngen
	$(B)/gdngen --out generated --templates templates

kernels: generate
	@mkdir -p $(B)/kernels $(B)/ptxas
	ninja -f generated/build.ninja
	$(B)/gdngen resources generated/RESOURCES.md $$(sed -n 's/^  log = //p' generated/build.ninja)

# The headers gdngen writes for the runtime (in RT_HDR): rewritten only
# when their text changes; this rule makes `make` regenerate them before
# the runtime is compiled against them.
generated/gdn_kernels.h generated/gdn_routes.h: generate
	@:

# libgdn: the runtime and the embedded kernels, shared and static. Only
# the functions gdn.h marks GDN_API leave libgdn.so (tests/install.sh checks).
RT_CFLAGS := -fPIC -fvisibility=hidden
$(B)/rt/%.o: runtime/%.c $(RT_HDR)
	@mkdir -p $(B)/rt
	$(CC) $(CFLAGS) $(RT_CFLAGS) -Iruntime -Igenerated $(CUDA_INC) -c -o $@ $<

# ninja (run by `kernels`, every time) rewrites embedded.c only when a
# kernel changed, so the library is relinked only then.
$(B)/kernels/embedded.c: kernels
	@:

$(B)/rt/embedded.o: $(B)/kernels/embedded.c
	$(CC) $(CFLAGS) $(RT_CFLAGS) -Iruntime -c -o $@ $<

# libgdn.commit says which commit the library was linked at (and whether
# tracked files differed from it), for records made where the checkout's
# git state is not the build's (a copy carried to the GPU machine).
$(B)/libgdn.so: $(RT_OBJ)
	$(CC) -shared -Wl,-soname,libgdn.so -o $@ $(RT_OBJ) $(CUDA_LIB) -lpthread -ldl -lm
	@if git rev-parse HEAD >/dev/null 2>&1; then git rev-parse HEAD; \
	   if [ -n "$$(git status --porcelain --untracked-files=no)" ]; then echo dirty; else echo clean; fi; \
	 else echo unknown unknown; fi > $(B)/libgdn.commit

$(B)/libgdn.a: $(RT_OBJ)
	ar rcs $@ $(RT_OBJ)

lib: $(B)/libgdn.so $(B)/libgdn.a

# ---------------------------------------------------------------- install
# `make install [PREFIX=/usr/local] [DESTDIR=...]`: libgdn (shared and
# static), gdn.h, a pkg-config file (gdngen.pc) and the Python binding,
# which then loads the installed libgdn.so. `make uninstall` removes them.
PREFIX     ?= /usr/local
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
PYTHONDIR  ?= $(LIBDIR)/gdngen/python
VERSION    := $(shell sed -n 's/^\#define GDNGEN_VERSION "\(.*\)"/\1/p' generator/gdngen.h)

install: lib
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PYTHONDIR)/gdngen
	install -m 755 $(B)/libgdn.so $(DESTDIR)$(LIBDIR)/libgdn.so
	install -m 644 $(B)/libgdn.a $(DESTDIR)$(LIBDIR)/libgdn.a
	install -m 644 runtime/gdn.h $(DESTDIR)$(INCLUDEDIR)/gdn.h
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' \
	    -e 's|@CUDA@|$(CUDA)|' -e 's|@VERSION@|$(VERSION)|' runtime/gdngen.pc.in \
	    > $(DESTDIR)$(LIBDIR)/pkgconfig/gdngen.pc
	install -m 644 runtime/python/gdngen/__init__.py $(DESTDIR)$(PYTHONDIR)/gdngen/__init__.py
	printf '# Written by make install: the libgdn.so this package loads.\nLIB = "%s"\n' \
	    '$(LIBDIR)/libgdn.so' > $(DESTDIR)$(PYTHONDIR)/gdngen/_install.py

uninstall:
	rm -f $(DESTDIR)$(LIBDIR)/libgdn.so $(DESTDIR)$(LIBDIR)/libgdn.a \
	      $(DESTDIR)$(INCLUDEDIR)/gdn.h $(DESTDIR)$(LIBDIR)/pkgconfig/gdngen.pc \
	      $(DESTDIR)$(PYTHONDIR)/gdngen/__init__.py $(DESTDIR)$(PYTHONDIR)/gdngen/_install.py
	rm -rf $(DESTDIR)$(PYTHONDIR)/gdngen/__pycache__
	-rmdir $(DESTDIR)$(PYTHONDIR)/gdngen $(DESTDIR)$(LIBDIR)/gdngen/python $(DESTDIR)$(LIBDIR)/gdngen \
	       2>/dev/null # the default PYTHONDIR's folders; a folder of your own stays

# ---------------------------------------------------------------- tests
CMOCKA := -lcmocka

$(B)/tests/test_ref: tests/cpu/test_ref.c $(REF_SRC) tests/ref/ref.h
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Itests/ref -o $@ tests/cpu/test_ref.c $(REF_SRC) $(CMOCKA) -lm

$(B)/tests/test_rules: tests/cpu/test_rules.c $(RULES) generator/fragment.c generator/legality.c generator/tail.c $(GEN_HDR)
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Igenerator -o $@ tests/cpu/test_rules.c $(RULES) generator/fragment.c \
	  generator/legality.c generator/tail.c $(CMOCKA)

$(B)/tests/test_emit: tests/cpu/test_emit.c $(GEN_SRC) $(GEN_HDR)
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Igenerator -o $@ tests/cpu/test_emit.c $(filter-out generator/main.c,$(GEN_SRC)) $(CMOCKA)

$(B)/tests/test_args: tests/cpu/test_args.c runtime/check.c runtime/route.c $(RT_HDR)
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Igenerated $(CUDA_INC) -o $@ tests/cpu/test_args.c runtime/check.c \
	  runtime/route.c $(CMOCKA) -lm

# NVRTC from the toolkit, found at run time through the rpath.
$(B)/tests/test_nvrtc: tests/cpu/test_nvrtc.c
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) $(CUDA_INC) -o $@ tests/cpu/test_nvrtc.c -L$(CUDA)/lib64 \
	  -Wl,-rpath,$(CUDA)/lib64 -lnvrtc $(CMOCKA)

$(B)/tests/test_routes: tests/cpu/test_routes.c runtime/check.c runtime/route.c $(RT_HDR)
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Igenerated $(CUDA_INC) -o $@ tests/cpu/test_routes.c runtime/check.c \
	  runtime/route.c $(CMOCKA) -lm

CPU_TESTS := $(B)/tests/test_rules $(B)/tests/test_emit $(B)/tests/test_ref $(B)/tests/test_args \
             $(B)/tests/test_nvrtc $(B)/tests/test_routes

# The GPU test binaries are built (not run) too, so that CI catches a
# change that breaks them; so is the CPU study of bench/tools/fold_study.c.
test: $(CPU_TESTS) kernels gpu-test $(B)/fold_study
	@for t in $(CPU_TESTS); do echo "== $$t"; $$t || exit 1; done
	bash tests/cli.sh $(B)/gdngen
	bash tests/install.sh "$(MAKE)"
	bash tests/check_codegen.sh $(B)/gdngen
	bash tests/tools/run.sh
	bash tests/fuzz/run.sh

$(B)/fold_study: bench/tools/fold_study.c $(REF_SRC) tests/ref/ref.h
	@mkdir -p $(B)
	$(CC) $(CFLAGS) -Itests/ref -o $@ bench/tools/fold_study.c $(REF_SRC) -lm

# libFuzzer over the argument rules, bounded to about a minute (needs clang).
fuzz:
	bash tests/fuzz/run.sh

# The codegen guard: generated/ is fresh, no kernel spills or uses stack,
# and generated/RESOURCES.md is the table of a fresh compile (needs nvcc).
check-codegen: $(B)/gdngen
	bash tests/check_codegen.sh $(B)/gdngen

# GPU tests link the real libcuda at run time (the stub here at link time).
$(B)/tests/gpu_probes: tests/gpu/probes.c tests/gpu/gpucheck.h generated/probes.h $(RULES) tests/ref/numeric.c
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Igenerator -Igenerated -Itests/ref -Itests/gpu $(CUDA_INC) -o $@ \
	  tests/gpu/probes.c $(RULES) tests/ref/numeric.c $(CUDA_LIB) -lm

$(B)/tests/gpu_gdn: tests/gpu/gdn_cases.c tests/gpu/gpucheck.h $(REF_SRC) $(B)/libgdn.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Itests/ref -Itests/gpu $(CUDA_INC) -o $@ \
	  tests/gpu/gdn_cases.c $(REF_SRC) $(B)/libgdn.a $(CUDA_LIB) -lpthread -ldl -lm

$(B)/tests/gpu_dispatch: tests/gpu/dispatch.c tests/gpu/gpucheck.h $(REF_SRC) $(B)/libgdn.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Itests/ref -Itests/gpu $(CUDA_INC) -o $@ \
	  tests/gpu/dispatch.c $(REF_SRC) $(B)/libgdn.a $(CUDA_LIB) -lpthread -ldl -lm

$(B)/tests/gpu_multi: tests/gpu/multi_gpu.c tests/gpu/gpucheck.h $(REF_SRC) $(B)/libgdn.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Itests/ref -Itests/gpu $(CUDA_INC) -o $@ \
	  tests/gpu/multi_gpu.c $(REF_SRC) $(B)/libgdn.a $(CUDA_LIB) -lpthread -ldl -lm

$(B)/tests/gpu_safety: tests/gpu/safety.c tests/gpu/gpucheck.h tests/ref/ref.h $(REF_SRC) $(B)/libgdn.a
	@mkdir -p $(B)/tests
	$(CC) $(CFLAGS) -Iruntime -Itests/ref -Itests/gpu $(CUDA_INC) -o $@ \
	  tests/gpu/safety.c $(REF_SRC) $(B)/libgdn.a $(CUDA_LIB) -lpthread -ldl -lm

GPU_TESTS := $(B)/tests/gpu_probes $(B)/tests/gpu_gdn $(B)/tests/gpu_dispatch $(B)/tests/gpu_safety

$(B)/gdn_bench: bench/gdn_bench.c $(REF_SRC) $(B)/libgdn.a
	$(CC) $(CFLAGS) -Iruntime -Itests/ref $(CUDA_INC) -o $@ bench/gdn_bench.c $(REF_SRC) \
	  $(B)/libgdn.a $(CUDA_LIB) -lpthread -ldl -lm

# The cost of one wgmma k-step by shape (bench/wgmma_rate.c): kernels on
# top of the probes' generated wrappers, and the driver-API program. A
# timing kernel that ptxas serialised would time something else: the
# codegen guard (`gdngen resources`) checks their ptxas log as it does the
# generated kernels'.
RATE_CUFLAGS := -gencode=arch=compute_90a,code=sm_90a -std=c++17 -O3 -Xptxas -v -Igenerated
RATE_LOG = $(B)/ptxas/wgmma_rate_$*.log
$(B)/kernels/wgmma_rate_%.cubin: bench/wgmma_rate.cu generated/probes_%.cu $(B)/gdngen
	@mkdir -p $(B)/kernels $(B)/ptxas
	nvcc $(RATE_CUFLAGS) -DRATE_$(if $(filter rs,$*),RS,SS) -cubin -o $@ bench/wgmma_rate.cu \
	  > $(RATE_LOG) 2>&1 || { rm -f $@; cat $(RATE_LOG); exit 1; }
	@$(B)/gdngen resources $(B)/ptxas/wgmma_rate_$*.md $(RATE_LOG) || { rm -f $@; exit 1; }
$(B)/wgmma_rate: bench/wgmma_rate.c tests/gpu/gpucheck.h $(B)/kernels/wgmma_rate_rs.cubin \
                 $(B)/kernels/wgmma_rate_ss.cubin
	$(CC) $(CFLAGS) -Itests/gpu $(CUDA_INC) -o $@ bench/wgmma_rate.c $(CUDA_LIB) -lm

# Cycles per step of the state chain in four forms (bench/chain_step.c);
# its kernels are generated/probe_step.cu, which `make kernels` compiles.
$(B)/chain_step: bench/chain_step.c tests/gpu/gpucheck.h
	$(CC) $(CFLAGS) -Itests/gpu $(CUDA_INC) -o $@ bench/chain_step.c $(CUDA_LIB) -lm

# The fixed cost of a call's launch shapes (graph replays; bench/launch_cost.cu).
$(B)/launch_cost: bench/launch_cost.cu
	@mkdir -p $(B)
	nvcc -O2 -arch=sm_90a -Xcompiler -Wall,-Wextra,-Werror -o $@ bench/launch_cost.cu

# libgdn.so too: tests/gpu/test_binding.py and bench/harness.py load it.
gpu-test: kernels $(GPU_TESTS) $(B)/gdn_bench $(B)/tests/gpu_multi $(B)/libgdn.so $(B)/wgmma_rate \
          $(B)/launch_cost $(B)/chain_step

gpu-check: gpu-test
	bash tests/gpu/run_all.sh

gpu-safety: gpu-test
	$(B)/tests/gpu_safety

# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) on small cases.
sanitize: gpu-test
	bash tests/gpu/sanitize.sh

# On a machine with two or more GPUs: one handle per GPU, heads split.
gpu-check-multi: gpu-test
	build/tests/gpu_multi

clean:
	rm -rf $(B)
