# rocmig: `make images` builds the default slice (debian source, ROCm 7.2, gfx942: base and dev);
# `make test` runs the unit and image tests. Variables select other cells:
#   make images ROCM=6.2                      (amd source: needs its base image and repo.radeon.com)
#   make images SOURCE=debian ROCM=5.7 ARCH=gfx90a IMAGES="base dev"
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BUILDCTL := $(BIN)/python -m buildctl
ROCM ?=
SOURCE ?=
ARCH ?=
IMAGES ?=
APT_MIRROR ?=
# APT_CHECK_VALID_UNTIL=false|true overrides buildctl's default, which follows the host apt's setting
# (a snapshot mirror, as on hosts with a frozen Debian mirror, needs it off).
APT_CHECK_VALID_UNTIL ?=
PYTEST_ARGS ?=

# IMAGES=all: every image role (images/*/image.yaml).
ROLES = $(if $(filter all,$(IMAGES)),$(notdir $(patsubst %/,%,$(dir $(wildcard images/*/image.yaml)))),$(IMAGES))
sel = $(if $(ROCM),--rocm $(ROCM)) $(if $(SOURCE),--source $(SOURCE)) $(foreach a,$(ARCH),--arch $(a)) $(foreach i,$(ROLES),--image $(i))
build_flags = $(if $(APT_MIRROR),--apt-mirror $(APT_MIRROR)) \
  $(if $(filter false,$(APT_CHECK_VALID_UNTIL)),--no-apt-check-valid-until) \
  $(if $(filter true,$(APT_CHECK_VALID_UNTIL)),--apt-check-valid-until)
# `make test` builds and checks every role of the slice (the CI slice: debian, ROCm 7.2, gfx942).
TEST_IMAGES ?= all

.PHONY: venv images render test cells unit lint clean

$(BIN)/python: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test,bench]'
	touch $(BIN)/python

venv: $(BIN)/python
	@echo "venv: buildctl is $(BIN)/buildctl; '. $(BIN)/activate' puts it on PATH (or use $(BIN)/python -m buildctl)"

# scripts/ensure-docker.sh starts what a build needs when it is missing (root on Debian: the steps of
# scripts/setup-docker.sh), else prints the exact command to run.
images: venv
	scripts/ensure-docker.sh
	$(BUILDCTL) base bootstrap trixie --if-missing
	$(strip $(BUILDCTL) build $(sel) $(build_flags))

render: venv
	$(strip $(BUILDCTL) render $(sel))

# Image tests check the slice that `make images IMAGES=$(TEST_IMAGES)` builds (same SOURCE / ROCM / ARCH):
# buildctl writes that slice's cells to build/test-cells.json and the image tests read them from there.
CELLS_FILE := build/test-cells.json
test: lint
	scripts/ensure-docker.sh --registry
	$(MAKE) images IMAGES="$(TEST_IMAGES)"
	$(MAKE) --no-print-directory cells IMAGES="$(TEST_IMAGES)"
	ROCMIG_CELLS_FILE=$(CELLS_FILE) $(BIN)/python -m pytest tests $(PYTEST_ARGS)

cells: venv
	mkdir -p $(dir $(CELLS_FILE))
	$(strip $(BUILDCTL) -q matrix $(sel)) --json > $(CELLS_FILE).tmp && mv $(CELLS_FILE).tmp $(CELLS_FILE)

unit: venv
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

# ruff over the Python of the project, mypy --strict over buildctl/ (settings in pyproject.toml).
lint: venv
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	rm -rf build
