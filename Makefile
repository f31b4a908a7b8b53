# BinLake-Go. `make run` tries the suite on one machine; `make test` starts the real test
# services (MariaDB, ZooKeeper, Kafka, an Elasticsearch-API engine) and runs every test.
SHELL := /bin/bash
GO ?= go
BIN := bin/binlake
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -s -w -X github.com/binlake/binlake/internal/buildinfo.Version=$(VERSION)
SERVICES := deploy/testenv/services.sh
# KEEP_SERVICES=1 leaves the test services running after `make test`.
KEEP_SERVICES ?=
# -parallel 4: the long integration tests marked t.Parallel mostly wait on services and
# processes, so four side by side fit the two cores of the CI machine.
TEST_FLAGS ?= -race -count=1 -parallel 4 -timeout 20m
BENCH ?= .

AGENT_BIN := bin/binlake-agent

.PHONY: all build build-agent proto run test unit flake services-up services-down services-status bench bench-agent bench-wave bench-judge bench-alarm lint fmt clean

all: build

# BUILD_FLAGS: extra go build flags (make run's first build passes -v).
BUILD_FLAGS ?=
build:
	$(GO) build $(BUILD_FLAGS) -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/binlake

## proto: regenerate the Go code of the .proto files under proto/ (wave/rowenc/rowpb and
## wave/rowenc/canalpb, committed): protoc from Maven Central, cached in ~/.cache/binlake-testenv.
proto:
	bash proto/gen.sh

## build-agent: the slim agent-only binary for the hosts the agent watches (-tags agentonly).
build-agent:
	$(GO) build -trimpath -tags agentonly -ldflags '$(LDFLAGS)' -o $(AGENT_BIN) ./cmd/binlake

## run: build and start the suite on embedded defaults (no external services). ARGS are
## flags for binlake up, quoted for the shell: make run ARGS='--interval 1s' or
## make run ARGS="--mysql 'root@tcp(127.0.0.1:3307)/'" (binlake up -h lists them).
## The build is announced first. The first one (no $(BIN) yet) compiles every dependency,
## which takes minutes on a small machine: it says so and lists the packages as they compile
## (go build -v), so that a silent screen is not mistaken for a hang.
ARGS ?=
run:
	@if [ -e $(BIN) ]; then echo "make run: building $(BIN)"; else echo "make run: building $(BIN) for the first time: every dependency is compiled, which takes a few minutes (about 2 on 2 cores); go lists the packages as it goes"; fi
	@$(MAKE) --no-print-directory build $(if $(wildcard $(BIN)),,BUILD_FLAGS=-v)
	./$(BIN) up $(ARGS)

## unit: the tests that need no service (integration tests skip).
unit:
	$(GO) test $(TEST_FLAGS) ./...

## flake: the service-free tests ten times each in shuffled order, to catch a test that
## depends on map order, goroutine scheduling, timing or state left by an earlier run. CI
## and every BINLAKE_TEST_* variable are unset, so the integration tests skip wherever it
## runs; -short trims the tests that only repeat a large build or data set. Without -race,
## which make unit and make test have: 1.4 min here, 5.3 min with FLAKE_FLAGS adding -race.
FLAKE_FLAGS ?= -short -count=10 -shuffle=on -timeout 20m
flake:
	@for v in CI $$(compgen -e | grep '^BINLAKE_TEST_'); do unset "$$v"; done; \
	$(GO) test $(FLAKE_FLAGS) ./...

## test: start the test services, run every test against them, stop them unless KEEP_SERVICES=1.
## deploy/testenv/test.sh runs the tests in two go test runs side by side (its header says
## why): the main one, -p 2, starts TEST_FIRST (its longest packages) so that the short
## packages fill in beside them; the side one runs TEST_SIDE (the alarm) one package at a
## time. Output goes through internal/testenv/testreport: a line per package, the output of
## what failed, and the ten slowest tests and packages at the end; bin/test-events/ keeps
## every event (`go test -json`) for a closer look at where the minutes went.
TEST_FIRST ?= ./judge/ ./wave/ ./internal/bus/kafka/ ./cmd/binlake/ ./deploy/ ./judge/store/elastic/ ./judge/store/
TEST_SIDE ?= ./alarm/
## PROCESS_TESTS run only without -race: what they test runs as a binlake process (the
## binary the tests share, built without it), so the race detector would instrument their
## harness alone, readers and writers that then cost two to three times the CPU (the wave's
## kill and outage tests: 38 CPU seconds under -race, 15 without) on a machine the suite
## keeps busy. The code those processes run is raced by the in-process tests. PROCESS_PKGS
## hold nothing else, and the -race runs leave them out.
PROCESS_TESTS ?= TestWaveKafkaRestartIntegration|TestWaveKafkaOutageIntegration|TestWaveFailoverIntegration|TestWaveKillRestartIntegration|TestSnapshotKillRestartIntegration|TestCanalProtobufConsumerIntegration|TestCanalJSONConsumerIntegration|TestProtobufConsumerIntegration|TestJudgeKillIntegration|TestAlarmRollingRestartIntegration|TestAlarmKill9UnderLoadIntegration|TestShardedAlarmProcessesKill9|TestAlarmPausedIntegration|TestBalancer[A-Za-z]*Integration|TestJudgeLearnsARealWavesCostIntegration
PROCESS_PKGS ?= ./wave/balancer/integration/
## NORACE_TESTS run after each run's -race pass, without -race too (their files say why: a
## simulated day of a whole fleet is too slow under the race detector; the wave's volume
## test runs a quarter of its rows under it, and all of them here; SQLite's
## TestConformance runs only its concurrent writers under it, since the race detector slows
## SQLite's engine, C transpiled to Go, twenty-fold: 50 s against 2.5 s here, for no race
## it could find; the formats' allocation count, which the race detector's sync.Pool
## spoils). The passes without -race run NORACE_TESTS and PROCESS_TESTS: those of
## NORACE_PKGS after the main run, of NORACE_SIDE_PKGS after the side run. The fleet
## simulator's (two minutes of CPU on both cores) is the main run's: after the side run it
## started last and ran alone for the suite's last 165 s, while the main run had ended.
NORACE_TESTS ?= TestJudgeBalancesSimulatedFleets|TestJudgeKeepsTheFleetBalanced|TestPlannerOnTrueCosts|TestWaveKafkaIntegration|TestConformance|TestFormatsAllocate
NORACE_PKGS ?= ./judge/store/sqlite/ ./wave/rowenc/ ./judge/ ./judge/fleetsim/
NORACE_SIDE_PKGS ?= ./wave/ ./wave/balancer/integration/ ./alarm/
test:
	@start=$$(date +%s); \
	bash $(SERVICES) up || exit 1; \
	eval "$$(bash $(SERVICES) env)"; \
	GO="$(GO)" TEST_FLAGS="$(TEST_FLAGS)" TEST_FIRST="$(TEST_FIRST)" TEST_SIDE="$(TEST_SIDE)" \
	NORACE_TESTS="$(NORACE_TESTS)" NORACE_PKGS="$(NORACE_PKGS)" NORACE_SIDE_PKGS="$(NORACE_SIDE_PKGS)" \
	PROCESS_TESTS="$(PROCESS_TESTS)" PROCESS_PKGS="$(PROCESS_PKGS)" \
	bash deploy/testenv/test.sh; rc=$$?; \
	if [ -z "$(KEEP_SERVICES)" ]; then bash $(SERVICES) down; fi; \
	echo "make test: exit $$rc after $$(( $$(date +%s) - start )) s"; \
	exit $$rc

services-up:
	bash $(SERVICES) up

services-down:
	bash $(SERVICES) down

services-status:
	bash $(SERVICES) status

## bench: Go benchmarks (integration benchmarks run when the services are up), then bench-wave,
## bench-judge and bench-alarm.
bench: build
	@eval "$$(bash $(SERVICES) env)"; \
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...
	$(MAKE) bench-wave
	$(MAKE) bench-judge
	$(MAKE) bench-alarm

## bench-wave: wave capture to Kafka against mariadb-binlog on the test services (ROWS=1000000).
ROWS ?= 1000000
bench-wave: build
	./$(BIN) bench wave -rows $(ROWS)

## bench-judge: a real judge process: placements with 1,000 live nodes, then ingest of 2,000,000
## points over HTTP and through Kafka (JUDGE_STORE=elastic for the test engine; JUDGE_FLAGS adds
## flags to every run).
JUDGE_STORE ?= sqlite
JUDGE_FLAGS ?=
bench-judge: build
	@eval "$$(bash $(SERVICES) env)"; \
	./$(BIN) bench judge -store $(JUDGE_STORE) $(JUDGE_FLAGS) && \
	./$(BIN) bench judge -mode ingest -store $(JUDGE_STORE) $(JUDGE_FLAGS) && \
	./$(BIN) bench judge -mode ingest -bus kafka -store $(JUDGE_STORE) $(JUDGE_FLAGS)

## bench-alarm: a real alarm process reading agent batches from Kafka (100 policies, 1,000 nodes,
## 3 partitions, 20 violations) at ALARM_RATES points/s, 30 s each (ALARM_FLAGS adds flags).
ALARM_RATES ?= 100000 250000 1000000
ALARM_FLAGS ?=
bench-alarm: build
	@eval "$$(bash $(SERVICES) env)"; \
	for r in $(ALARM_RATES); do ./$(BIN) bench alarm -rate $$r $(ALARM_FLAGS) || exit 1; done

## bench-agent: the agent's RSS and CPU beside Debian's prometheus-node-exporter (BENCHMARKS.md).
bench-agent: build
	BIN=$(BIN) bash deploy/bench/agent-footprint.sh

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { echo "go.mod/go.sum not tidy: run go mod tidy"; exit 1; }

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
