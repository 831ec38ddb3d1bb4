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
# real-HTTP agreement test, which needs real time undistorted by it.
test: lint
	$(GO) test -race -count=1 ./...
	$(GO) test -count=1 -run "TestReplayAgreesWithTheSimulation|TestDriverTimingGapMedian" ./cmd/herdlab ./realhttp

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

# docs: regenerate the charts the README shows (commit them after a look).
docs: build
	./$(BIN) run $(SCENARIO) -q --out out/docs
	mkdir -p docs
	cp out/docs/load.png out/docs/recovery.png docs/

clean:
	rm -rf bin out
