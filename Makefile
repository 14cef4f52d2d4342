# droprun: reproduce, measure and compare the requests a rolling update drops.
# `make help` lists the targets.

GO      ?= go
BIN     := bin/droprun
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: help build test test-all test-short lint bench stats-table images engine node-image cluster demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/droprun
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/droprun

test: ## every test, one package at a time (the cluster tests measure, so nothing else may load the machine); cluster tests skip without an engine or node image
	$(GO) test -p 1 -count=1 -timeout 75m ./...

test-all: ## what make test runs, and the long end-to-end matrix CI leaves out: every variant of scenarios/compare-all.yaml, 3 rollouts each (about 16 min more)
	DROPRUN_E2E_ALL=1 $(GO) test -p 1 -count=1 -timeout 100m ./...

test-short: ## unit tests only (skips the process and build integration tests)
	$(GO) test -short -count=1 ./...

lint: ## go vet and gofmt
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench: ## traffic client benchmarks (achieved vs asked rate, the generators' merge in records/s, client CPU, memory per million results; CPU per 1,000 req/s against the vegeta CLI and a plain grpc-go loop, per protocol), then the highest rate the cluster measures clean and the observers' share of the machine per target and load source (needs an engine and the node image; run on a quiet machine)
	$(GO) test -run '^$$' -bench 'Classify|Pipeline' -benchmem ./harness/attack/
	$(GO) test -run '^$$' -bench Stream -benchmem -count 5 ./harness/generators/
	$(GO) test -run '^$$' -bench AttackLoopback -benchtime 1x ./harness/attack/ -args -attack.rate 1000 -attack.duration 10s
	$(GO) test -run '^$$' -bench AttackLoopback -benchtime 1x ./harness/attack/ -args -attack.rate 3000 -attack.duration 10s
	$(GO) test -run '^$$' -bench ClientCost -benchtime 1x -timeout 30m ./harness/attack/ -args -attack.rate 1000 -attack.duration 5s -attack.pairs 5
	$(GO) test -run '^$$' -bench CleanRate -benchtime 1x -timeout 60m ./harness/run/
	$(GO) test -run '^$$' -bench ObserverShare -benchtime 1x -timeout 3h ./harness/run/

stats-table: ## simulate 2,000 runs per cell from known truths and write the gate's error rates and the change search's into docs/statistics.md (about 3 min on 2 cores)
	$(GO) run ./internal/opchartable

images: build ## build the bookshop images (v1, v2; standard and distroless) into out/images/
	$(BIN) image build --out out/images

engine: build ## install, configure and start dockerd on Debian (a no-op when ready)
	$(BIN) engine setup

node-image: build ## build the kind node image offline (about 15 min cold on a fresh 2-core machine, a no-op when cached)
	$(BIN) node-image build

cluster: node-image ## create (or reuse) the 3-node kind cluster
	$(BIN) cluster up

demo: engine node-image ## the main job on a fresh machine: a kind cluster, then no-prestop vs graceful-drain under 500 req/s
	$(BIN) run scenarios/demo.yaml

clean: ## remove build output (never results/)
	rm -rf bin out
