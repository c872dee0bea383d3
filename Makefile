# Loop: a session engine for coding agents. `make test` is what CI runs.
GO ?= go
BIN := bin/loop
# Race-built test binaries otherwise sleep 1 s at every exit (docs/testing.md).
export GORACE := atexit_sleep_ms=0

.PHONY: build install run test unit race vet fmt bench clean npm-deps

# The version loop --version prints: git describe when there is a git
# checkout, else what the go command stamps in the build information.
VERSION ?= $(shell git describe --always --dirty 2>/dev/null)
LDFLAGS := $(if $(VERSION),-X main.version=$(VERSION))
# Where make install puts loop: $GOBIN, else ~/go/bin.
GOBIN ?= $(or $(shell $(GO) env GOBIN),$(HOME)/go/bin)

build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/loop

# It says where loop went, and how to reach it when that is not on PATH.
install:
	GOBIN=$(GOBIN) $(GO) install -trimpath -ldflags "$(LDFLAGS)" ./cmd/loop
	@echo "installed $(GOBIN)/loop"
	@case ":$$PATH:" in *":$(GOBIN):"*) ;; *) \
	  echo "$(GOBIN) is not on your PATH: run this, and add it to your shell's startup file:"; \
	  echo '    export PATH="$$PATH:$(GOBIN)"';; esac

# The main job: a real server on stdin/stdout, with the offline demo model (loop serve: plain
# loop at a terminal is the chat).
run: build
	./$(BIN) serve --demo

# Each package's tests must end within TEST_TIMEOUT (RACE_TIMEOUT under -race), or go test
# stops them and fails with the names of the tests still running ("panic: test timed out
# after ...", then "running tests:"). No package takes more than about 2 minutes, or 3 under
# -race, on a 2-core machine shared with other jobs (docs/testing.md): the limits leave
# several times that, and keep even a run that hangs in both passes far inside CI's
# 90 minutes.
TEST_TIMEOUT ?= 15m
RACE_TIMEOUT ?= 20m

# All tests: vet, unit tests and testscript scenarios, then again under the race detector.
test: vet npm-deps
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) ./...
	$(GO) test -count=1 -race -timeout $(RACE_TIMEOUT) ./...

# The npm packages of the tests that run a client under node (the TypeScript ACP interop
# test: rpc/internal/acp/testdata/interop) or compile with tsc (what `loop protocol ts` prints:
# rpc/testdata/typescript). `npm ci` runs when npm is available and the lock file
# changed since the last install; without npm, or when the install fails, a SKIP line says
# which tests will not run. Under CI (CI=true) that stops `make test`, and the tests
# themselves fail instead of skipping.
NPM_DIRS := $(patsubst ./%/package-lock.json,%,$(shell find . -name node_modules -prune -o -name .git -prune -o -name package-lock.json -print 2>/dev/null))
npm-deps:
	@for d in $(NPM_DIRS); do \
	  if cmp -s $$d/package-lock.json $$d/node_modules/.loop-installed-lock; then \
	    :; \
	  elif ! command -v npm >/dev/null 2>&1; then \
	    echo "SKIP: npm is not installed: the tests that need $$d/node_modules will be skipped"; \
	    case "$$CI" in 1|t|T|true|TRUE|True) exit 1;; esac; \
	  elif (cd $$d && npm ci --no-audit --no-fund --loglevel=error) && cp $$d/package-lock.json $$d/node_modules/.loop-installed-lock; then \
	    echo "npm ci: installed $$d/node_modules"; \
	  else \
	    echo "SKIP: npm ci failed in $$d: the tests that need its packages will be skipped"; \
	    case "$$CI" in 1|t|T|true|TRUE|True) exit 1;; esac; \
	  fi; \
	done

unit:
	$(GO) test -timeout $(TEST_TIMEOUT) ./...

race:
	$(GO) test -race -timeout $(RACE_TIMEOUT) ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin
