# Loop: a session engine for coding agents. `make test` is what CI runs.
GO ?= go
BIN := bin/loop
# Race-built test binaries otherwise sleep 1 s at every exit (go-libraries.md).
export GORACE := atexit_sleep_ms=0

.PHONY: build run test unit race vet fmt bench clean

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

build:
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/loop

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
