# ledgerd — developer entry points. `make test` is what CI runs.
GO        ?= go
TAGS      := hashicorpmetrics
TOOLS     := $(GO) tool -modfile=tools/go.mod
TERRAFORM := $(CURDIR)/bin/terraform
PKGS      := ./...

.PHONY: test lint proto-check unit build run generate fuzz help tools-terraform deploy-check rehearsal three-nodes \
	chaos slurm-test slurm-chaos bench-planner seedexp simexp unitsexp bench-service bench-raft bench-recovery pgo-profile ui-build ui-check ui-screenshots bench-ui

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

test: lint proto-check ui-check unit ## everything CI checks: gofmt, vet, staticcheck, schema checks, UI bundle, race tests

lint: ## gofmt, go vet, staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '\.pb\.go$$')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TAGS) $(PKGS)
	$(TOOLS) staticcheck -tags $(TAGS) $(PKGS)

# The last released schema is kept as a buf image; a change that breaks wire or
# JSON compatibility with it fails here. Generated code must match the schema.
PROTO_RELEASE := proto/releases/v0.1.0.binpb
proto-check: ## buf lint, buf breaking against the last release, generated code up to date
	$(TOOLS) buf lint
	$(TOOLS) buf breaking --against $(PROTO_RELEASE)
	$(TOOLS) buf generate
	@git diff --exit-code --stat -- gen/ || { echo "generated code is stale: run make generate and commit gen/"; exit 1; }

unit: tools-terraform ## race-enabled tests of every package
	TERRAFORM=$$([ -x $(TERRAFORM) ] && echo $(TERRAFORM)) $(GO) test -race -tags $(TAGS) -timeout 20m $(PKGS)

build: ## build the ledgerd binary into ./bin
	$(GO) build -tags $(TAGS) -o bin/ledgerd ./cmd/ledgerd

run: ## one-node dev cluster with sample resources
	$(GO) run -tags $(TAGS) ./cmd/ledgerd agent -dev

generate: ## regenerate protobuf/Connect code
	$(TOOLS) buf generate

# Every package with a fuzz target, found rather than listed, so that a new
# target is run without anyone remembering to add it here.
FUZZ_PKGS = $(shell git grep -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u | sed 's|^|./|')

fuzz: ## run every fuzz target for FUZZTIME each (default 30s)
	@for p in $(FUZZ_PKGS); do \
	  for t in $$($(GO) test -tags $(TAGS) -list 'Fuzz.*' $$p | grep ^Fuzz); do \
	  $(GO) test -tags $(TAGS) -run '^$$' -fuzz "^$$t$$" -fuzztime $${FUZZTIME:-30s} $$p || exit 1; done; done

# Terraform is only needed by the deploy/terraform checks (fmt, init, validate,
# native tests of the provider-free module). It builds from source once into
# ./bin; when that is impossible (offline) those checks skip and say so.
tools-terraform: ## build terraform v1.6.6 into ./bin (once)
	@[ -x $(TERRAFORM) ] || GOBIN=$(CURDIR)/bin $(GO) install github.com/hashicorp/terraform@v1.6.6 \
	  || echo "warning: could not build terraform; the terraform checks will skip"

deploy-check: tools-terraform ## terraform fmt/init/validate/test and rendering drift of deploy/terraform
	TERRAFORM=$(TERRAFORM) $(GO) test -tags $(TAGS) -count=1 -v -run 'Terraform|Golden|ConfigCheck|CloudInit' ./deploy/terraform

rehearsal: ## three agents on 127.0.0.11-13 from rendered configs: form, lose the leader, rolling restart
	scripts/rehearsal.sh

three-nodes: ## three agents on loopback with -bootstrap-expect 3; kill the leader; keep admitting
	scripts/three-nodes.sh

chaos: ## long chaos campaign against real agents (NODES, DURATION, NEMESIS, CLIENT=unary|batch, RECURRING=0 to leave out series, ENDED_MAX=100 to drop ended reservations)
	$(GO) run -tags $(TAGS) ./jepsen/cmd/chaos -nodes $${NODES:-5} -duration $${DURATION:-10m} -nemesis $${NEMESIS:-all} -client $${CLIENT:-unary} -recurring=$$([ "$${RECURRING:-1}" = 0 ] && echo false || echo true) -ended-max $${ENDED_MAX:-0}

slurm-test: ## the Slurm bridge's tests against a real Slurm, verbose (root; apt-get install slurmctld slurmd slurm-client munge)
	$(GO) test -race -tags $(TAGS) -count=1 -v ./bridge/...

slurm-chaos: ## reconcile against a real Slurm under kills, restarts, hand edits and drains, alone and with a 3-server ledger in the loop (STEPS, default 30; SEED to replay)
	$(GO) test -tags $(TAGS) -count=1 -v -timeout 60m -run TestChaosAgainstSlurm ./bridge/slurm/ -slurm.chaos $${STEPS:-30} $(if $(SEED),-slurm.seed $(SEED))
	$(GO) test -tags $(TAGS) -count=1 -v -timeout 60m -run TestChaosLedgerAndSlurm ./bridge/follow/ -follow.chaos $${STEPS:-30} $(if $(SEED),-follow.seed $(SEED))

bench-planner: ## list vs indexed admission benchmarks, 1k-1M live reservations (see benchmarks/planner)
	$(GO) test -tags $(TAGS) -timeout 90m -run '^$$' -bench 'Admission|Release' -count 6 ./planner/

# seedexp and simexp take any SWF trace (gzip or plain): make seedexp
# TRACE=my.swf.gz [CAPACITY=n] [OUT=dir]. Without CAPACITY the trace header's
# MaxProcs (else MaxNodes) is used; without OUT the committed results are
# rewritten. SEEDFLAGS / SIMFLAGS pass further flags (-h lists them).
TRACE_ARGS = $(if $(TRACE),-trace $(TRACE)) $(if $(CAPACITY),-capacity $(CAPACITY))

seedexp: ## the seed papers' list vs slotted-time experiment; TRACE=, CAPACITY=, OUT= (see benchmarks/seed)
	$(GO) run -tags $(TAGS) ./benchmarks/seed/cmd/seedexp $(TRACE_ARGS) -out $(or $(OUT),benchmarks/seed/results) $(SEEDFLAGS)

unitsexp: ## concrete units: count-only vs refuse vs remap on KTH and Lublin (see benchmarks/sim)
	$(GO) run -tags $(TAGS) ./benchmarks/sim/cmd/unitsexp -out $(or $(OUT),benchmarks/sim/results)

simexp: ## policy simulator: reject / move-variable / relaxed; TRACE=, CAPACITY=, OUT= (see benchmarks/sim)
	$(GO) run -tags $(TAGS) ./benchmarks/sim/cmd/simexp $(TRACE_ARGS) -out $(or $(OUT),benchmarks/sim/results) $(SIMFLAGS)

bench-service: ## ledgerd vs raw raft, etcd, PostgreSQL (one node and with a sync standby) (see benchmarks/results)
	scripts/bench-service.sh

pgo-profile: ## retake cmd/ledgerd/default.pgo, the profile builds of ledgerd are optimised with (see benchmarks/pgo)
	scripts/pgo-profile.sh

bench-recovery: ## restart time and RSS of one agent at 100k and 1M reservations (benchmarks/results/recovery)
	LIVE=100000 OUT=benchmarks/results/recovery scripts/bench-recovery.sh
	LIVE=1000000 OUT=benchmarks/results/recovery scripts/bench-recovery.sh

# The web UI (ui/): its built bundle ui/dist and generated TypeScript client
# ui/web/src/gen are committed, so building ledgerd needs only Go. Editing
# ui/web/src needs Node (ui/web/.nvmrc) and npm.
ui-build: ## npm ci, regenerate the UI's TypeScript client, rebuild ui/dist
	cd ui/web && npm ci --no-audit --no-fund && npm run generate && npm run build

ui-check: ## ui/dist and ui/web/src/gen are reproducible from ui/web (skips loudly without npm's registry)
	scripts/ui-check.sh

ui-screenshots: ## regenerate the README's UI screenshots (docs/img) from the browser tests
	UI_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -tags $(TAGS) -count=1 -run TestBrowser ./ui

bench-ui: ## UI first render and pan/zoom redraw p95 with 10k reservations (benchmarks/results/ui)
	scripts/bench-ui.sh
