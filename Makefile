# herdlab: a lab for thundering herds.
# Needs only Go (see go.mod for the version) and make.

GO        ?= go
BIN       := bin/herdlab
SCENARIO  ?= scenarios/thundering-herd.yaml
BENCHCOUNT ?= 6
FUZZTIME  ?= 10s

.PHONY: all build test check bench demo docs lint fuzz clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/herdlab

# test: formatting, vet, every test with the race detector, then the
# tests that need real time undistorted by it (the real-HTTP agreement and
# timing) or are too slow under it (the metastable phase diagram), one
# package at a time (-p 1) so that none takes the others' cores.
test: lint
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -p 1 -run "TestReplayAgreesWithTheSimulation|TestDriverTimingGapMedian|TestMetastablePhaseDiagram" ./cmd/herdlab ./realhttp ./sweep

# check: every shipped scenario's checks, the way a team gates its own in CI.
check: build
	./$(BIN) check scenarios/*.yaml

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# bench: every benchmark, $(BENCHCOUNT) times, in a form benchstat compares:
#   make bench > old.txt; (change); make bench > new.txt; benchstat old.txt new.txt
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) ./...

# fuzz: each fuzz target for $(FUZZTIME).
fuzz:
	$(GO) test ./strategies -run='^$$' -fuzz=FuzzRetryAfter -fuzztime=$(FUZZTIME)
	$(GO) test ./scenarios -run='^$$' -fuzz=FuzzParse -fuzztime=$(FUZZTIME)

# demo: the main job on the default scenario (the article's thundering herd):
# every strategy simulated, a table on the terminal, the report under out/.
demo: build
	./$(BIN) run $(SCENARIO)

# docs: regenerate the charts the README shows (commit them after a look):
# the default scenario's load and recovery, and the metastable scenario's
# phase diagram (3 runs a point, about 21 s on 2 cores).
docs: build
	./$(BIN) run $(SCENARIO) -q --out out/docs
	rm -rf out/docs-phase
	./$(BIN) sweep scenarios/metastable.yaml --runs 3 -q --out out/docs-phase
	mkdir -p docs
	cp out/docs/load.png out/docs/recovery.png docs/
	cp out/docs-phase/heatmap-immediate.png docs/phase-immediate.png
	cp out/docs-phase/heatmap-equal-jitter-10s.png docs/phase-equal-jitter-10s.png

clean:
	rm -rf bin out
