# herdlab: a lab for thundering herds.
# Needs only Go (see go.mod for the version) and make.

GO        ?= go
BIN       := bin/herdlab
SCENARIO  ?= scenarios/thundering-herd.yaml
BENCHCOUNT ?= 6
FUZZTIME  ?= 10s

.PHONY: all build install test check bench demo docs docs-into docs-check lint fuzz clean ui site assets release image

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

# test: formatting, vet, every test with the race detector, then the
# tests that need real time undistorted by it (the real-HTTP agreement and
# timing) or are too slow under it (the metastable phase diagram, the
# AWS adaptive client against a reference of the SDK's loop, herdtest's
# byte-for-byte reproducibility at GOMAXPROCS 1 and 2), one
# package at a time (-p 1) so that none takes the others' cores.
# The WebAssembly test (web/wasm) and the browser tests (web: a headless
# Chromium against herdlab ui and the static site) keep a core busy for a
# minute: they run in the second, sequential step, not beside the
# timing-sensitive real-HTTP tests of the first. Last, the examples
# module (examples/clients, a module of its own so that herdlab does not
# depend on the retry libraries it runs through herdtest): its tests.
test: lint
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list ./... | grep -v /web/wasm)
	$(GO) test -count=1 -p 1 -timeout 10m -run "TestAWSAdaptiveSendsWhatTheSDKSends|TestAWSAdaptiveFollowsTheRateLimit|TestReplayAgreesWithTheSimulation|TestGraphReplayAgreesWithTheSimulation|TestDriverTimingGapMedian|TestMetastablePhaseDiagram|TestFinishedRunsFreeTheirWorld|TestEstimateCoversTheRuns|TestASignalStopsEveryPhase|TestShippedScenariosKeepTheirOutputs|TestWebAssemblyMatchesTheCLI|TestInTheBrowser|TestReportInTheBrowser|TestTheSameSeedWritesTheSameBytes|TestAGraphWritesTheSameBytes" ./cmd/herdlab ./realhttp ./sweep ./sim ./herdtest ./web/wasm ./web
	@echo "examples/clients: real Go retry libraries (go-retryablehttp, cenkalti/backoff, failsafe-go, grpc-go) through herdtest"
	cd examples/clients && $(GO) test -count=1 -timeout 5m ./...

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

# bench: every benchmark, $(BENCHCOUNT) times, in a form benchstat compares:
#   make bench > old.txt; (change); make bench > new.txt; benchstat old.txt new.txt
bench:
	$(GO) test -run='^$$' -bench=. -benchmem -count=$(BENCHCOUNT) ./...

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
