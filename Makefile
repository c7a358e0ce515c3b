# ledgerd — developer entry points. `make test` is what CI runs.
GO        ?= go
TAGS      := hashicorpmetrics
TOOLS     := $(GO) tool -modfile=tools/go.mod
PKGS      := ./...

.PHONY: test lint unit build run generate fuzz bench help

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

test: lint unit ## everything CI checks: gofmt, vet, staticcheck, race tests

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(TOOLS) staticcheck -tags $(TAGS) $(PKGS)

unit: ## race-enabled tests of every package
	$(GO) test -race -tags $(TAGS) -timeout 20m $(PKGS)

build: ## build the ledgerd binary into ./bin
	$(GO) build -tags $(TAGS) -o bin/ledgerd ./cmd/ledgerd

run: ## one-node dev cluster with sample resources
	$(GO) run -tags $(TAGS) ./cmd/ledgerd agent -dev

generate: ## regenerate protobuf/Connect code
	$(TOOLS) buf generate

fuzz: ## run every fuzz target for FUZZTIME each (default 30s)
	@for p in ./planner/ ./fsm/; do \
	  for t in $$($(GO) test -tags $(TAGS) -list 'Fuzz.*' $$p | grep ^Fuzz); do \
	  $(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$p || exit 1; done; done
