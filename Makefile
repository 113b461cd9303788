# grassflow build. `make` builds build/grassflow (and build/libgrassflow.{a,so}); `make test` runs every
# test, including the ASan+UBSan build of the C tests; `make install PREFIX=/usr/local` (and DESTDIR=)
# installs the command, the library, its header, pkg-config files and the data the command ships.
# Options: NO_OMP=1, NO_NATIVE=1, NO_DNNL=1, NO_MPI=1, SAN=1.
CC      ?= gcc
BUILD   ?= build
CFLAGS  ?= -O3
CFLAGS  += -std=c11 -D_GNU_SOURCE -Wall -Wextra -fPIC -Iinclude -Isrc -MMD -MP
LDLIBS  += -lcjson -llzma -lz -lpng16 -lm

# --- probes (each says what it found) --------------------------------------------------------------
# ARCH: the -march to build for (native by default; tests/trust/valgrind.sh uses x86-64-v3, since valgrind does
# not decode AVX-512)
ARCH ?= native
ifneq ($(NO_NATIVE),1)
  NATIVE_OK := $(shell echo 'int main(void){return 0;}' | $(CC) -march=$(ARCH) -x c - -o /dev/null 2>/dev/null && echo yes)
  ifeq ($(NATIVE_OK),yes)
    CFLAGS += -march=$(ARCH)
  endif
endif
ifneq ($(NO_OMP),1)
  OMP_OK := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo yes)
  ifeq ($(OMP_OK),yes)
    CFLAGS  += -fopenmp
    LDFLAGS += -fopenmp
  endif
endif
# OpenBLAS: Debian's OpenMP flavour first (it runs single-threaded inside our parallel regions instead
# of oversubscribing), then whatever pkg-config finds.
OB_OMP := /usr/lib/x86_64-linux-gnu/openblas-openmp
ifneq ($(wildcard $(OB_OMP)/libopenblas.so),)
  CFLAGS  += -I/usr/include/x86_64-linux-gnu/openblas-openmp
  LDLIBS  += -L$(OB_OMP) -Wl,-rpath,$(OB_OMP) -lopenblas
  BLAS_FOUND := OpenBLAS (OpenMP flavour)
else
  CFLAGS  += $(shell pkg-config --cflags openblas 2>/dev/null)
  LDLIBS  += $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
  BLAS_FOUND := OpenBLAS (pkg-config)
endif
# oneDNN (Debian's libdnnl-dev) for bf16 matmuls; without it (or with NO_DNNL=1) grassflow builds as
# before and refuses bf16 with the reason
ifneq ($(NO_DNNL),1)
  DNNL_OK := $(shell printf '\043include <oneapi/dnnl/dnnl.h>\nint main(void){return dnnl_get_effective_cpu_isa() == 0;}\n' | $(CC) -x c - -o /dev/null -ldnnl 2>/dev/null && echo yes)
  ifeq ($(DNNL_OK),yes)
    CFLAGS += -DGF_HAVE_DNNL
    LDLIBS += -ldnnl
  endif
endif
# OpenMPI (Debian's libopenmpi-dev) for data-parallel training: with mpicc on the PATH (and not NO_MPI=1),
# its compile and link flags; without it grassflow builds for one process, as before
ifneq ($(NO_MPI),1)
  MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
  MPI_LIBS := $(shell mpicc --showme:link 2>/dev/null)
  ifneq ($(MPI_LIBS),)
    MPI_OK := $(shell printf '\043include <mpi.h>\nint main(void){return MPI_Initialized(0);}\n' | $(CC) $(MPI_CFLAGS) -x c - -o /dev/null $(MPI_LIBS) 2>/dev/null && echo yes)
  endif
  ifeq ($(MPI_OK),yes)
    CFLAGS += -DGF_HAVE_MPI $(MPI_CFLAGS)
    LDLIBS += $(MPI_LIBS)
  endif
endif
ifeq ($(SAN),1)
  CFLAGS  := $(filter-out -O3,$(CFLAGS)) -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
  LDFLAGS += -fsanitize=address,undefined
endif

LIB_SRC := $(sort $(filter-out src/cli/%,$(wildcard src/*/*.c src/*/*/*.c)))
# the command: src/cli/, and `grassflow bench`'s measuring code, which lives with the other benchmarks
CLI_SRC := $(sort $(wildcard src/cli/*.c)) bench/command.c
TEST_SRC := $(sort $(wildcard tests/unit/test_*.c))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_COMMON := $(BUILD)/obj/tests/unit/testlib.o
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all examples demo bench install test test-c test-kernels test-avx2 test-parity test-cli test-studies test-layout \
	test-train test-install test-readme test-trust test-fuzz test-bench test-san test-snli clean info
all: info $(BUILD)/grassflow $(BUILD)/libgrassflow.a $(BUILD)/libgrassflow.so

info:
	@echo "grassflow build: -march=native $(if $(NATIVE_OK),yes,no), OpenMP $(if $(OMP_OK),yes,no), BLAS $(BLAS_FOUND), oneDNN $(if $(DNNL_OK),yes,no), MPI $(if $(MPI_OK),yes,no)$(if $(filter 1,$(SAN)), [ASan+UBSan])"

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

# one-row matrix-vector products (src/compute/gemv.c): a * b + c as one fused multiply-add where the CPU has it
$(BUILD)/obj/src/compute/gemv.o: CFLAGS += -ffp-contract=fast

# AdamW's update (src/train/adamw.c): its sqrtf and division run as vectors only when sqrtf need not set errno
# (it never does there: a second moment is not negative). Vector square roots and divisions are correctly rounded
# like the scalar ones and nothing is fused, so the bits stay (tests/train/fixtures.sh); scalar, the update was
# 2.5-4% of a word-level step on an AVX2 EPYC (issue 50, docs/bench/method.md).
$(BUILD)/obj/src/train/adamw.o: CFLAGS += -fno-math-errno

# the command-line tool builds on the installed headers alone (include/grassflow.h and grassflow_plugin.h:
# it walks the registered tasks' tables), as it builds against an installed copy
# (tests/project/install.sh): without -Isrc, an internal header included by src/cli/ fails the build
$(BUILD)/obj/src/cli/%.o: src/cli/%.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Isrc,$(CFLAGS)) -c $< -o $@
$(BUILD)/obj/bench/command.o: bench/command.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Isrc,$(CFLAGS)) -Isrc/cli -c $< -o $@

$(BUILD)/libgrassflow.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^ # afresh: ar r keeps members of removed files (and matches members by base name)

# the shared library carries its ABI version in its soname (libgrassflow.so.GF_ABI_VERSION) and exports
# only what include/grassflow.h and include/grassflow_plugin.h declare (the library builds with
# -fvisibility=hidden)
VERSION := $(shell sed -n 's/^\#define GF_VERSION "\(.*\)"/\1/p' include/grassflow.h)
SOMAJOR := $(shell sed -n 's/^\#define GF_ABI_VERSION \([0-9]*\)/\1/p' include/grassflow.h)
$(LIB_OBJ): CFLAGS += -fvisibility=hidden
$(BUILD)/libgrassflow.so: $(LIB_OBJ) Makefile
	$(CC) -shared -Wl,-soname,libgrassflow.so.$(SOMAJOR) $(LDFLAGS) -o $@ $(LIB_OBJ) $(LDLIBS)

$(BUILD)/grassflow: $(CLI_OBJ) $(BUILD)/libgrassflow.a
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libgrassflow.a $(LDLIBS)

# the command make install installs: the same, without the tests' fault injection (src/cli/testhooks.h)
RELEASE_HOOKS := $(BUILD)/obj/release/testhooks.o
$(RELEASE_HOOKS): src/cli/testhooks.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Isrc,$(CFLAGS)) -DGF_NO_TEST_HOOKS -c $< -o $@
$(BUILD)/release/grassflow: $(filter-out %/testhooks.o,$(CLI_OBJ)) $(RELEASE_HOOKS) $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(filter-out %/testhooks.o,$(CLI_OBJ)) $(RELEASE_HOOKS) $(BUILD)/libgrassflow.a $(LDLIBS)

# every test program has the test-only block kind (tests/plugins/block_parallel.c: one file, one registration).
# The programs land in $(BUILD)/tests/ whichever folder of tests/ holds their source: the C unit tests of
# tests/unit/ and the parity checkers of tests/parity/ (tests/parity/parity.sh and distilbert.sh run them)
TEST_KIND := $(BUILD)/obj/tests/plugins/block_parallel.o
TEST_CHECK := $(BUILD)/tests/parity_check $(BUILD)/tests/import_check $(BUILD)/tests/lm_import_check
$(TEST_BIN): $(BUILD)/tests/%: $(BUILD)/obj/tests/unit/%.o $(TEST_COMMON) $(TEST_KIND) $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_COMMON) $(TEST_KIND) $(BUILD)/libgrassflow.a $(LDLIBS) -lcmocka
$(TEST_CHECK): $(BUILD)/tests/%: $(BUILD)/obj/tests/parity/%.o $(TEST_COMMON) $(TEST_KIND) $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $< $(TEST_COMMON) $(TEST_KIND) $(BUILD)/libgrassflow.a $(LDLIBS) -lcmocka

# a build of the command with the test-only block kind (tests/parity/parity.sh initialises its configs with it)
$(BUILD)/tests/grassflow-blocks: $(CLI_OBJ) $(TEST_KIND) $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(TEST_KIND) $(BUILD)/libgrassflow.a $(LDLIBS)

# a build of the command with one more task, added by tests/plugins/task_vectors.c alone (tests/cli/task_plugin.sh)
$(BUILD)/tests/grassflow-vectors: $(CLI_OBJ) $(BUILD)/obj/tests/plugins/task_vectors.o $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/obj/tests/plugins/task_vectors.o $(BUILD)/libgrassflow.a $(LDLIBS)

# examples/: programs that embed the library through include/grassflow.h alone (custom_mixer.c, which adds
# a mixer, through include/grassflow_plugin.h)
EXAMPLES := $(patsubst examples/%.c,$(BUILD)/examples/%,$(wildcard examples/*.c))
examples: $(EXAMPLES)

$(BUILD)/examples/%: examples/%.c $(BUILD)/libgrassflow.a
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -Isrc,$(CFLAGS)) $(LDFLAGS) -o $@ $< $(BUILD)/libgrassflow.a $(LDLIBS)

# --- install: bin/grassflow, lib/libgrassflow.{a,so}, include/grassflow{,_plugin}.h, pkg-config files,
# share/grassflow/
# `pkg-config --cflags --libs grassflow` links the shared library. pkg-config has one Libs line for both
# kinds of link, so `--static` can only add what the static library needs (cJSON and liblzma through their
# own .pc files, OpenMP, libm and the same OpenBLAS this build links) and -lgrassflow still finds the .so
# first; the static library is its own module: `pkg-config --libs grassflow-static` (or `--static --libs`)
# links libgrassflow.a and all of that. The command-line tool goes to bin/ and the data and configs it
# ships to share/grassflow/, where it looks for them (after GRASSFLOW_DATA and a build tree's data/).
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
SHAREDIR ?= $(PREFIX)/share/grassflow
PC_LIBS_PRIVATE := $(filter-out -lcjson -llzma -lz -lpng16,$(LDFLAGS) $(LDLIBS))
PC_LIBDIR := $(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))
PC_INCDIR := $(patsubst $(PREFIX)/%,$${prefix}/%,$(INCDIR))
PC_HEAD = 'prefix=$(PREFIX)' 'libdir=$(PC_LIBDIR)' 'includedir=$(PC_INCDIR)' '' 'Version: $(VERSION)' \
	'Description: Grassmann-flow and Transformer language models on CPUs' 'Cflags: -I$${includedir}'
install: all $(BUILD)/release/grassflow
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCDIR) $(DESTDIR)$(SHAREDIR)
	install -m 755 $(BUILD)/release/grassflow $(DESTDIR)$(BINDIR)/grassflow
	install -m 644 $(BUILD)/libgrassflow.a $(DESTDIR)$(LIBDIR)/libgrassflow.a
	install -m 755 $(BUILD)/libgrassflow.so $(DESTDIR)$(LIBDIR)/libgrassflow.so.$(VERSION)
	ln -sf libgrassflow.so.$(VERSION) $(DESTDIR)$(LIBDIR)/libgrassflow.so.$(SOMAJOR)
	ln -sf libgrassflow.so.$(SOMAJOR) $(DESTDIR)$(LIBDIR)/libgrassflow.so
	install -m 644 include/grassflow.h include/grassflow_plugin.h $(DESTDIR)$(INCDIR)/
	rm -rf $(DESTDIR)$(SHAREDIR)/data $(DESTDIR)$(SHAREDIR)/configs
	cp -R data configs $(DESTDIR)$(SHAREDIR)/
	printf '%s\n' $(PC_HEAD) 'Name: grassflow' 'Requires.private: libcjson liblzma zlib libpng' 'Libs: -L$${libdir} -lgrassflow -lm' \
	    'Libs.private: $(strip $(PC_LIBS_PRIVATE))' >$(DESTDIR)$(LIBDIR)/pkgconfig/grassflow.pc
	printf '%s\n' $(PC_HEAD) 'Name: grassflow-static' 'Requires: libcjson liblzma zlib libpng' \
	    'Libs: $${libdir}/libgrassflow.a $(strip $(PC_LIBS_PRIVATE))' >$(DESTDIR)$(LIBDIR)/pkgconfig/grassflow-static.pc

# The README's default job (scripts/demo.sh): about two minutes of a character-level Grassmann LM.
demo: all
	bash scripts/demo.sh

# --- tests -------------------------------------------------------------------------------------------
# OpenBLAS's fast kernel for this CPU (see docs/build.md), or the OPENBLAS_CORETYPE set if this
# CPU runs it (tests/coretype.sh --env: never a core whose instructions the CPU lacks); harmless elsewhere.
TEST_ENV := OPENBLAS_CORETYPE=$$(bash tests/coretype.sh --env)

test: test-c test-kernels test-avx2 test-parity test-cli test-studies test-layout test-train test-snli test-install \
	test-readme test-trust test-fuzz test-bench test-san
	@echo "all tests passed"

test-c: all $(TEST_BIN)
	@for t in $(TEST_BIN); do echo "== $$t"; $(TEST_ENV) $$t || exit 1; done
	@echo "== $(BUILD)/tests/test_precision where oneDNN's ISA limit excludes bf16 (ONEDNN_MAX_CPU_ISA=AVX2)"
	@ONEDNN_MAX_CPU_ISA=AVX2 $(TEST_ENV) $(BUILD)/tests/test_precision

# the C tests again under every other OpenBLAS kernel that machines are seen to pick (HASWELL, ZEN,
# SKYLAKEX, as far as this CPU runs them): sgemm rounds differently from kernel to kernel, so a bit-for-bit
# claim that holds under the machine's own kernel can fail on the next machine
test-kernels: all $(TEST_BIN)
	@for k in $$(bash tests/coretype.sh --others); do for t in $(TEST_BIN); do \
	    OPENBLAS_CORETYPE=$$k $$t >$(BUILD)/tests/kernel.log 2>&1 && echo "== $$t under $$k: $$(grep -c '\[       OK \]' $(BUILD)/tests/kernel.log) passed" \
	    || { cat $(BUILD)/tests/kernel.log; echo "== $$t FAILED under OPENBLAS_CORETYPE=$$k"; exit 1; }; done; done

# the C tests of an AVX2 build (x86-64-v3: what an AVX2-only CPU such as a Zen 3 EPYC compiles to), with oneDNN
# limited to AVX2 and OpenBLAS's Haswell kernel: on an AVX-512 machine this is the AVX2 path's test (loops the
# compiler vectorises there and not here, or here and not there, hold their references either way)
test-avx2:
	@$(MAKE) -s --no-print-directory BUILD=$(BUILD)/avx2 ARCH=x86-64-v3 all $(patsubst $(BUILD)/%,$(BUILD)/avx2/%,$(TEST_BIN))
	@for t in $(patsubst $(BUILD)/%,$(BUILD)/avx2/%,$(TEST_BIN)); do \
	    ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell $$t >$(BUILD)/avx2/tests.log 2>&1 \
	    && echo "== $$t (x86-64-v3): $$(grep -c '\[       OK \]' $(BUILD)/avx2/tests.log) passed" \
	    || { cat $(BUILD)/avx2/tests.log; echo "== $$t FAILED in the AVX2 build"; exit 1; }; done
	@echo "== the library for x86-64 without AVX2 or FMA (code chosen by the ISA at build time compiles in every branch)"
	@$(MAKE) -s --no-print-directory BUILD=$(BUILD)/base ARCH=x86-64 $(BUILD)/base/libgrassflow.a

# PyTorch: the reference's self-test (tests/parity/torch_ref/selftest.py: against formulas written out, no C), every
# model config (tests/parity/parity.sh), a Hugging Face DistilBERT folder (tests/parity/distilbert.sh), alphaXiv's
# and GrassLM's checkpoints (tests/parity/imports.sh), and
# the Python package (python/grassflow: ctypes and grassflow.torch) against the command (tests/parity/python.sh)
test-parity: all
	OMP_NUM_THREADS=1 /usr/bin/python3 tests/parity/torch_ref/selftest.py
	$(TEST_ENV) bash tests/parity/parity.sh $(BUILD)
	$(TEST_ENV) bash tests/parity/distilbert.sh $(BUILD)
	$(TEST_ENV) bash tests/parity/imports.sh $(BUILD)
	$(if $(filter 1,$(SAN)),,$(TEST_ENV) bash tests/parity/python.sh $(BUILD))

# the command's behaviour (tests/cli/): exit codes and messages, compare, pair files, every --help option, a
# task of a test's own, plot, honest counts and hints, inspect (its JSON, figures and equalities)
test-cli: all examples $(BUILD)/tests/grassflow-vectors
	$(TEST_ENV) bash tests/cli/cli.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/compare.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/search.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/pairs.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/help.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/task_plugin.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/plot.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/honest.sh $(BUILD)
	$(TEST_ENV) bash tests/cli/inspect.sh $(BUILD)

# the studies' machinery at toy sizes (tests/studies/: the mixer study's bookkeeping, the deconstruction's
# findings table, the precision study end to end) and the OpenMP regions per streamed token the precision
# study found (regions.sh)
test-studies: all
	bash tests/studies/mixer_study.sh $(BUILD)
	bash tests/studies/deconstruct_table.sh
	bash tests/studies/g2p_study.sh
	bash tests/studies/image_table.sh
	bash tests/studies/job.sh
	$(TEST_ENV) bash tests/studies/precision_study.sh $(BUILD)
	$(if $(filter 1,$(SAN)),,$(TEST_ENV) bash tests/studies/regions.sh $(BUILD))

# the source layout the maps promise: names, folders, include cycles, make clean (tests/project/layout.sh)
test-layout:
	bash tests/project/layout.sh
	bash tests/project/links.sh

test-train: all $(BUILD)/tests/test_fixtures
	$(TEST_ENV) bash tests/train/train.sh $(BUILD)
	$(TEST_ENV) bash tests/train/g2p.sh $(BUILD)
	$(TEST_ENV) bash tests/train/synth.sh $(BUILD)
	$(TEST_ENV) bash tests/train/image.sh $(BUILD)
	$(if $(filter 1,$(SAN)),,$(TEST_ENV) bash tests/train/mpi.sh $(BUILD))
	$(if $(filter 1,$(SAN)),,$(TEST_ENV) bash tests/train/runs.sh $(BUILD))
	$(TEST_ENV) bash tests/train/fixtures.sh $(BUILD)

# SNLI: the shipped splits' published counts, the official file forms, bad files, a full-size file streamed
test-snli: all
	$(TEST_ENV) bash tests/train/snli.sh $(BUILD)

# make install into a temporary prefix, then every example built against it with pkg-config alone
test-install: all
	$(TEST_ENV) bash tests/project/install.sh $(BUILD)

# every grassflow command of the README, as written (the long jobs: that they start)
test-readme: all
	$(TEST_ENV) bash tests/project/readme.sh $(BUILD)

# hostile files (tests/trust/hostile.sh; `bash tests/trust/hostile.sh build --doc` rewrites docs/hostile-inputs.md),
# runs that go wrong: NaN, signals, a full disk, 20 SIGKILLs with resumes (tests/trust/trust.sh, tests/trust/kill.sh),
# an OPENBLAS_CORETYPE this CPU cannot run (tests/trust/environment.sh)
test-trust: all
	$(TEST_ENV) bash tests/trust/hostile.sh $(BUILD)
	$(TEST_ENV) bash tests/trust/trust.sh $(BUILD)
	$(TEST_ENV) bash tests/trust/kill.sh $(if $(filter 1,$(SAN)),5,20) $(BUILD)
	$(if $(filter 1,$(SAN)),,$(TEST_ENV) bash tests/trust/environment.sh $(BUILD))

# every parser under libFuzzer (clang-14, ASan+UBSan): the seeds replayed, then 5 s each
# (long runs: bash tests/fuzz/run.sh 600)
test-fuzz:
	bash tests/fuzz/run.sh --smoke

# benchmarks are not timed tests: CI only checks that the benchmark machinery runs, on tiny shapes, in
# seconds (tests/studies/bench.sh: the per-mixer parts end to end; `bash bench/run.sh --smoke` runs every part)
test-bench: all
	$(TEST_ENV) bash tests/studies/bench.sh $(BUILD)

# the full benchmark against PyTorch, every mixer of bench/mixers.conf (about 13 minutes on 2 quiet cores;
# the plan is printed first); writes docs/bench/. BENCH_ARGS=--plan prints the plan alone; BENCH_ARGS="--only
# NAME --out DIR" runs one part or one mixer into DIR (a partial run never writes docs/bench/)
bench: all
	bash bench/run.sh $(BENCH_ARGS)

# The sanitizer build runs the C tests and the shell suites again, but not all of their time: no
# tests/train/snli.sh (its reader code runs under tests/cli/pairs.sh and test_nli), tests/train/runs.sh or
# tests/parity/python.sh (the trainer's and the library's code they reach runs under test_train,
# tests/train/train.sh and the C tests), and 5 SIGKILLs instead of 20. Measured on 2026-11-28 (2 cores of an AMD EPYC, builds made): the whole
# `make test` 551 s, 238 of them here (it was 778 and 356 before the Python sides of the parity tests ran in
# one process each, the finite differences of test_mixers on every core, kill.sh's kills on time and the
# fuzzers two at a time); a clean-clone `bash .ci/run` 10 minutes with the installs and the first builds.
test-san:
	$(MAKE) --no-print-directory BUILD=build/san SAN=1 test-c test-parity test-cli test-studies test-layout test-train test-trust

# what the build made, and nothing else: run folders (runs/, --out) are the user's (tests/project/layout.sh checks
# that a clean checkout stays clean)
clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
