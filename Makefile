# The README's commands. Each sets up what it needs (virtual environment, the package with its
# native probe, system packages the tests use) and then runs. Nothing hidden.
#   make lab    the main job: characterize, model, write results to ./xferlab-results/
#   make test   the tests
#   make bench  the performance benchmarks (each prints a ratio against its reference)

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.xferlab-installed
INTEL_STAMP := $(VENV)/.xferlab-intel
SOURCES := pyproject.toml CMakeLists.txt $(shell find src native -type f -not -name '*.pyc' 2>/dev/null)
APT_PACKAGES := cmake g++ make zlib1g-dev libpmemobj1
# An OpenCL device for the device suite: PoCL runs OpenCL on the CPU (Debian's pocl-opencl-icd).
OPENCL_PACKAGES := ocl-icd-libopencl1 pocl-opencl-icd
# Two site MPIs beside the mpich wheel for the network tests (tests/mpis.py): Debian's Open MPI 4.1 and MPICH 4.0,
# side by side (mpicc.openmpi/mpiexec.openmpi, mpicc.mpich/mpiexec.mpich). On Debian 12 the install took 38 s and
# 219 MB on the 2-vCPU VM (apt-get update 2.6 s before it).
MPI_PACKAGES := openmpi-bin libopenmpi-dev mpich libmpich-dev
# Headless Chromium for the report's browser tests (driven by Playwright, which downloads no browser):
# Debian's chromium gives /usr/bin/chromium; DejaVu fonts so that pages render with real glyphs.
BROWSER_PACKAGES := chromium fonts-dejavu-core

.PHONY: lab test bench sysdeps opencl mpi browser clean

lab: $(STAMP)
	-@$(MAKE) --no-print-directory opencl
	$(BIN)/xferlab lab

# The tests in parallel (pytest-xdist, a worker per core, each test to the next free worker; the tests sharing a
# module fixture stay on one worker: tests/conftest.py groups them), then the tests marked `serial` (they compare
# timings) alone. Fails if either part fails. Each part lists its 25 slowest tests.
# Intel's OpenCL CPU runtime (the extra `intel`, from PyPI) beside the system's PoCL: the device tests that take
# the `platform` fixture (tests/conftest.py) run on both; OCL_ICD_VENDORS names the folder holding both .icd files.
test: sysdeps opencl mpi browser $(STAMP) $(INTEL_STAMP)
	@status=0; export OCL_ICD_VENDORS="$$(sh scripts/opencl_vendors.sh $(VENV))"; \
	$(BIN)/python -m pytest -q -n auto --dist loadgroup --durations=25 -m "not serial" || status=$$?; \
	$(BIN)/python -m pytest -q --durations=25 -m serial || status=$$?; \
	exit $$status

bench: $(STAMP)
	$(BIN)/python -m pip install -q '.[bench]'
	@failed=""; for b in benchmarks/bench_*.py; do echo "== $$b"; $(BIN)/python $$b; rc=$$?; \
	  if [ $$rc = 3 ]; then echo "(skipped: what it needs is not on this machine)"; elif [ $$rc != 0 ]; then failed="$$failed $$b"; fi; done; \
	if [ -n "$$failed" ]; then echo "below target:$$failed"; exit 1; fi

# System packages: a C++ compiler and CMake build the probe; PMDK's libpmemobj (loaded at run time by
# `measure memory --pmdk`, tests/test_pmdk.py) runs STREAM-PMem. Installed with apt-get when missing
# and we are root; otherwise say what is missing.
sysdeps:
	@missing=""; for tool in cmake g++ make; do command -v $$tool >/dev/null 2>&1 || missing="$$missing $$tool"; done; \
	test -f /usr/include/zlib.h || missing="$$missing zlib1g-dev"; \
	ldconfig -p | grep -q 'libpmemobj.so.1 ' || missing="$$missing libpmemobj1"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing system packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); \
	  else echo "missing system tools:$$missing (install them, then rerun)"; exit 1; fi; \
	fi

# An OpenCL ICD loader with at least one platform; installed with apt-get when missing and we are root.
opencl:
	@if ldconfig -p | grep -q 'libOpenCL.so.1' && ls /etc/OpenCL/vendors/*.icd >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing an OpenCL platform: $(OPENCL_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(OPENCL_PACKAGES) >/dev/null; \
	else echo "no OpenCL platform: install $(OPENCL_PACKAGES) (the device tests need one)"; exit 1; fi

# Debian's Open MPI and MPICH (the network tests run on both and on the wheel); installed with apt-get when
# missing and we are root, else the tests on them are skipped (a failure in CI).
mpi:
	@if command -v mpicc.openmpi >/dev/null 2>&1 && command -v mpicc.mpich >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing two site MPIs: $(MPI_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(MPI_PACKAGES) >/dev/null; \
	else echo "no Open MPI or MPICH (mpicc.openmpi, mpicc.mpich): install $(MPI_PACKAGES); the network tests on them are skipped"; fi

# Chromium at /usr/bin/chromium; installed with apt-get when missing and we are root.
browser:
	@if [ -x /usr/bin/chromium ] && [ -e /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing a headless browser: $(BROWSER_PACKAGES)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BROWSER_PACKAGES) >/dev/null; \
	else echo "no headless browser (/usr/bin/chromium, DejaVu fonts): install $(BROWSER_PACKAGES) (the report's browser tests need it)"; exit 1; fi

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(STAMP): $(BIN)/python $(SOURCES)
	$(MAKE) --no-print-directory sysdeps
	$(BIN)/python -m pip install -q '.[dev]'
	@touch $@

# The extras' packages once per install of the package: `xferlab[intel,sycl]` (a name, not `.`) is resolved against
# the installed xferlab's metadata, so pip adds the extras' packages without building xferlab again; one resolution,
# as both pin Intel's runtime at 2025.0.5 (sycl: dpctl 0.18.3 and Intel's SYCL runtime, for tests/test_sycl.py; its
# size and install time in docs/device.md). Where they cannot install (not x86-64 Linux, no network) the Intel and
# SYCL runs are skipped, and fail in CI (CI=true).
$(INTEL_STAMP): $(STAMP)
	@$(BIN)/python -m pip install -q 'xferlab[intel,sycl]' && touch $@ || echo "the extras intel and sycl did not install: the device tests on Intel's platforms and SYCL are skipped (in CI they fail)"

clean:
	rm -rf $(VENV) build
