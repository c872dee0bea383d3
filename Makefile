# Loop: a session engine for coding agents. `make test` is what CI runs.
GO ?= go
BIN := bin/loop
# Race-built test binaries otherwise sleep 1 s at every exit (go-libraries.md).
export GORACE := atexit_sleep_ms=0

.PHONY: build install run test unit race vet fmt bench clean

# The version loop --version prints: git describe when there is a git
# checkout, else what the go command stamps in the build information.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X main.version=$(VERSION))
# Where make install puts loop: $GOBIN, else ~/go/bin.
GOBIN ?= $(or $(shell $(GO) env GOBIN),$(HOME)/go/bin)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/loop

install:
	GOBIN=$(GOBIN) $(GO) install -trimpath -ldflags "$(LDFLAGS)" ./cmd/loop
	@echo "installed $(GOBIN)/loop"

# The main job: a real server on stdin/stdout, with the offline demo model.
run: build
	./$(BIN) --demo

# All tests: vet, unit tests and testscript scenarios, then again under the race detector.
test: vet
	$(GO) test -count=1 ./...
	$(GO) test -count=1 -race ./...

unit:
	$(GO) test ./...

race:
	$(GO) test -race ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
