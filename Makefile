# herdlab: a lab for thundering herds.
# Needs only Go (see go.mod for the version) and make; make test also
# wants chromium, node and redis-server for the browser, WebAssembly and
# Redis tests, which skip without them, saying so (docs/development.md).
# make test (about 7 minutes on 2 cores), make test-long (4 more), make
# check, make bench, make fuzz: each target's comment says what it does.

GO        ?= go
BIN       := bin/herdlab
SCENARIO  ?= scenarios/thundering-herd.yaml
BENCHCOUNT ?= 6
FUZZTIME  ?= 10s

.PHONY: all build install test test-race test-plain test-long test-skips check bench demo docs docs-into docs-check lint fuzz clean ui site assets release image

all: build

# VERSION is what herdlab version prints: the commit, described by git
# (the go command records none when -buildvcs is off).
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# COMMIT is stamped beside it (herdlab version prints both).
COMMIT    ?= $(shell git rev-parse HEAD 2>/dev/null)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/herdlab

# install: herdlab on your PATH, in $(go env GOPATH)/bin, from this clone.
install:
	$(GO) install -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" ./cmd/herdlab

# test: what a change must pass; about 7 minutes on a quiet 2-core
# machine, with Go's build cache warm (docs/development.md, "Tests",
# has the figures of each step and how they were measured). In turn:
#   lint: gofmt and go vet;
#   1 and 2, at once (test-race and test-plain), a package at a time each:
#   1. every package (but web/wasm, which runs Node.js) with the race
#      detector: the tests of servers, drivers, parallel
#      runs and sweeps, whose races it finds. The single-goroutine
#      statistical tests it would slow fivefold to tenfold without
#      finding anything skip under it (skipUnderRace) and run in step 2;
#   2. every package again without the detector: the
#      tests skipped under it, the browser tests in a headless Chromium,
#      the WebAssembly build under Node.js, and the rest once more. It
#      runs whole packages, so that no test skipped under the detector
#      can fall between the steps; but for ALONE_PKGS (realhttp), whose
#      tests all ran under the detector but those of real time
#      (ALONE_TESTS: the driver's timing), which run after both, alone,
#      with the cores to themselves. internal/maketest
#      checks that ALONE_TESTS names every test of ALONE_PKGS that skips
#      under the detector;
#   3. the examples module (examples/clients, a module of its own so that
#      herdlab does not depend on the retry libraries it runs through
#      herdtest): its tests.
# Steps 1 and 2 pass -short: the tests that do less with it (the
# real-HTTP agreement tests, minutes of wall time; the shipped
# scenarios' claims at fewer runs) run in full in make test-long, which
# CI runs too. A group of tests that cannot run here (no chromium, node,
# redis-server or docker) skips: make test says which, first and last.
# The -timeouts are generous for a loaded machine: a hung test fails,
# a slow one does not.
ALONE_PKGS  := ./realhttp
ALONE_TESTS := TestDriverTimingGapMedian
test: lint
	@$(MAKE) --no-print-directory test-skips
	@$(MAKE) --no-print-directory -j2 -Oline test-race test-plain
	$(GO) test -short -count=1 -p 1 -timeout 10m -run '^($(subst $(space),|,$(strip $(ALONE_TESTS))))$$' $(ALONE_PKGS)
	@echo "examples/clients: real Go retry libraries (go-retryablehttp, cenkalti/backoff, failsafe-go, grpc-go) through herdtest"
	cd examples/clients && $(GO) test -count=1 -timeout 10m ./...
	@$(MAKE) --no-print-directory test-skips

# test-race and test-plain: make test's steps 1 and 2, which it runs at
# once, a package at a time each, so that both cores stay busy to the end
# of both.
test-race:
	$(GO) test -race -short -count=1 -p 1 -timeout 20m $$($(GO) list ./... | grep -v /web/wasm)
test-plain:
	$(GO) test -short -count=1 -p 1 -timeout 20m $$($(GO) list ./... | grep -v $(foreach p,$(ALONE_PKGS),-e '$(patsubst ./%,/%,$(p))$$'))

# test-long: the tests that make test's -short shortens, in full and
# without the race detector, one package at a time: the real-HTTP
# agreement tests (real-mode.yaml and the three-layer graph replayed
# against the simulation, in-process and against herdlab serve; a herd
# of 50,000), the claims of the shipped scenarios at their own runs,
# 300 random scenarios, a sweep of 10,000 points, a call edge's retries
# timed at its callee. About 4 minutes on a
# 2-core machine, mostly the real-HTTP tests' wall time. LONG_TESTS and LONG_PKGS must
# name every test that calls testing.Short and its package:
# internal/maketest checks that they do.
LONG_TESTS := TestReplayAgreesWithTheSimulation TestReplayAgreesWithTheSimulationAgainstServe \
	TestReplayAgreesWithTheSimulationOrSaysSoAt50000Requests TestGraphReplayAgreesWithTheSimulation \
	TestScenarioLibrary TestPropertiesOfRandomScenarios TestSweepChecksWhatVaries TestGraphCallTimingGap
LONG_PKGS  := ./cmd/herdlab ./realhttp ./scenarios ./sim
empty :=
space := $(empty) $(empty)
test-long:
	$(GO) test -count=1 -p 1 -timeout 20m -run '^($(subst $(space),|,$(strip $(LONG_TESTS))))$$' $(LONG_PKGS)

# test-skips: a line for each group of tests that cannot run on this
# machine and skips (or, with its HERDLAB_REQUIRE_* set, as .ci/run sets
# them, fails), and how to get what it needs.
test-skips:
	@if [ -z "$$HERDLAB_REQUIRE_CHROMIUM" ] && ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then \
		echo "make test: skipping web's browser tests: chromium not found (Debian: apt-get install chromium)"; fi
	@if [ -z "$$HERDLAB_REQUIRE_NODE" ] && ! command -v node >/dev/null 2>&1; then \
		echo "make test: skipping web/wasm's WebAssembly test: node not found (Debian: apt-get install nodejs)"; fi
	@if [ -z "$$HERDLAB_REQUIRE_REDIS" ] && ! command -v redis-server >/dev/null 2>&1; then \
		echo "make test: skipping the tests that kill and restart Redis (realhttp, cmd/herdlab): redis-server not found (Debian: apt-get install redis-server)"; fi
	@if [ -z "$$HERDLAB_REDIS_URL" ]; then \
		echo "make test: skipping realhttp's tests on a running Redis store: HERDLAB_REDIS_URL is not set (.ci/run starts a redis-server and sets it)"; fi
	@if ! docker info >/dev/null 2>&1; then \
		echo "make test: skipping the container image test: no docker daemon answers docker info"; fi

# release: herdlab for every OS and CPU of a release, with the Go
# toolchain alone (CGO_ENABLED=0, -trimpath, VERSION and COMMIT stamped),
# into $(DIST): herdlab_VERSION_OS_ARCH.tar.gz (.zip for windows), each
# with LICENSE and README.md, and SHA256SUMS (cd $(DIST) && sha256sum -c
# SHA256SUMS). The same commit gives the same bytes: the archives' times
# are the commit's. TARGETS builds some only: make release TARGETS="linux/arm64".
DIST    ?= dist
TARGETS ?=
release:
	rm -rf $(DIST)
	$(GO) run ./internal/release -go "$(GO)" -version "$(VERSION)" -commit "$(COMMIT)" \
		-mtime "$$(git log -1 --format=%ct 2>/dev/null || echo 0)" -out $(DIST) -targets "$(TARGETS)"

# image: the container image a user runs, $(IMAGE):$(VERSION) and
# $(IMAGE):latest: the static binary for linux/$(IMAGE_ARCH), built here,
# alone in an image FROM scratch (deploy/Dockerfile; the build context is
# the binary's folder), so that building it pulls nothing and sends only
# the binary. docker run --rm -v "$$PWD:/work" herdlab run x.yaml
IMAGE      ?= herdlab
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath \
		-ldflags "-s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o bin/linux-$(IMAGE_ARCH)/herdlab ./cmd/herdlab
	docker build --platform linux/$(IMAGE_ARCH) -f deploy/Dockerfile -t $(IMAGE):$(VERSION) -t $(IMAGE):latest bin/linux-$(IMAGE_ARCH)

# ui: the lab in the browser, at http://127.0.0.1:8090/ (herdlab ui).
ui: build
	./$(BIN) ui $(SCENARIO)

# site: the same app as a static site in $(SITE), any static host can
# serve it; the simulator runs in the browser, in WebAssembly.
SITE ?= site
site:
	GOOS=js GOARCH=wasm $(GO) build -trimpath -o bin/herdlab.wasm ./web/wasm
	$(GO) run ./web/site -o $(SITE) --wasm bin/herdlab.wasm --goroot "$$($(GO) env GOROOT)"

# assets: rebuild the page's bundle (web/app/dist, committed and embedded)
# from web/app's sources and its locked npm packages; needs Node.js and npm.
assets:
	cd web/app && npm ci --no-audit --no-fund && npm run build

# check: every shipped scenario's checks, the way a team gates its own in
# CI; the figures the README and docs/ state of shipped scenarios are what
# herdlab run says now, their links lead somewhere; and the charts are
# what the code draws.
check: build
	./$(BIN) check scenarios/*.yaml scenarios/configs/*.yaml
	$(GO) test -count=1 -timeout 10m -run '^(TestDocsFigures|TestREADMEDemoTable|TestDocsGraphsQuoteTheRun|TestDocsLinksResolve|TestREADMEIsAFrontDoor)$$' ./cmd/herdlab
	$(MAKE) --no-print-directory docs-check

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

# bench: every benchmark, $(BENCHCOUNT) times, in a form benchstat compares
# (web/wasm's with the herdlab command's profile, cmd/herdlab/default.pgo,
# so that its native side is built as the command is):
#   make bench > old.txt; (change); make bench > new.txt; benchstat old.txt new.txt
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) $$($(GO) list ./... | grep -v /web/wasm)
	$(GO) test -pgo=cmd/herdlab/default.pgo -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) ./web/wasm

# fuzz: each fuzz target for $(FUZZTIME) (a -fuzz pattern must match one
# target only, hence the anchors).
fuzz:
	$(GO) test ./strategies -run='^$$' -fuzz='^FuzzRetryAfter$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./scenarios -run='^$$' -fuzz='^FuzzParse$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./scenarios -run='^$$' -fuzz='^FuzzParseValues$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./scenarios -run='^$$' -fuzz='^FuzzLint$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./sim -run='^$$' -fuzz='^FuzzSimulate$$' -fuzztime=$(FUZZTIME)
	$(GO) test ./sim -run='^$$' -fuzz='^FuzzGraph$$' -fuzztime=$(FUZZTIME)

# demo: the main job on the default scenario (the article's thundering herd):
# every strategy simulated, a table on the terminal, the report under out/.
demo: build
	./$(BIN) run $(SCENARIO)

# docs: regenerate the charts the README shows (commit them after a look):
# the default scenario's load and recovery, the metastable scenario's
# phase diagram (3 runs a point, about 25 s on 2 cores), and go-retryablehttp
# through herdtest (examples/clients).
DOCS_IMAGES := load.png recovery.png phase-immediate.png phase-equal-jitter-10s.png herdtest-retryablehttp.png
docs: build
	$(MAKE) --no-print-directory docs-into DOCS_DIR=docs

# docs-into: draw the README's charts into $(DOCS_DIR).
docs-into:
	./$(BIN) run $(SCENARIO) -q --out out/docs
	rm -rf out/docs-phase
	./$(BIN) sweep scenarios/metastable.yaml --runs 3 -q --out out/docs-phase
	mkdir -p $(DOCS_DIR)
	cp out/docs/load.png out/docs/recovery.png $(DOCS_DIR)/
	cp out/docs-phase/heatmap-immediate.png $(DOCS_DIR)/phase-immediate.png
	cp out/docs-phase/heatmap-equal-jitter-10s.png $(DOCS_DIR)/phase-equal-jitter-10s.png
	cd examples/clients && $(GO) test -count=1 -run '^TestREADMEChart$$' . -args -docs $(abspath $(DOCS_DIR))

# docs-check: fail when the committed charts are not what make docs draws
# now (run make docs, look, commit).
docs-check: build
	rm -rf out/docs-check
	$(MAKE) --no-print-directory docs-into DOCS_DIR=out/docs-check
	@for f in $(DOCS_IMAGES); do \
		cmp -s docs/$$f out/docs-check/$$f || { echo "docs/$$f is not what make docs draws now: run make docs, look at it, commit it"; exit 1; }; \
	done; echo "docs: the committed charts are what make docs draws"

clean:
	rm -rf bin out dist
