# The two commands a fresh machine needs (see README.md):
#   make compare   set up, build everything, run the wasm-vs-native comparison
#   make test      set up, build everything, run every test
# Both install what they need themselves: the wasm32-wasip2 and wasm32-wasip1
# targets (the latter for tests/apps/spin2-sdk, a Spin 2 era app) and oha.

CARGO ?= cargo
SPINBENCH := target/release/spinbench
COMPARE_ARGS ?=

.PHONY: compare test build setup clean

compare: build
	$(SPINBENCH) compare $(COMPARE_ARGS)

test: build
	$(CARGO) test --release --workspace

# Natives and the runner, then the components through the manifest's own build
# commands (what `spin build` runs).
build: setup
	$(CARGO) build --release --workspace --bins
	$(SPINBENCH) build --manifest spin.toml
	$(SPINBENCH) build --manifest spin-p3.toml
	$(SPINBENCH) build --manifest tests/misbehaving/spin.toml
	$(SPINBENCH) build -f tests/template-app
	$(SPINBENCH) build -f tests/template-app/kv
	$(SPINBENCH) build -f tests/template-app/llm
	$(SPINBENCH) build -f tests/apps/spin4-template
	$(SPINBENCH) build -f tests/apps/spin2-sdk
	$(SPINBENCH) build -f tests/apps/wagi
	$(SPINBENCH) build -f tests/apps/key-value
	$(SPINBENCH) build -f tests/apps/wasi-keyvalue
	$(SPINBENCH) build -f tests/apps/sqlite
	$(SPINBENCH) build -f tests/apps/postgres
	$(SPINBENCH) build -f tests/apps/mysql
	$(SPINBENCH) build -f tests/apps/outbound
	$(SPINBENCH) build -f tests/apps/files

setup:
	rustup target add wasm32-wasip2 wasm32-wasip1
	command -v oha >/dev/null || $(CARGO) install oha --locked

clean:
	$(CARGO) clean
	rm -rf results
