package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An input that becomes startable while config/reload runs (a hold
// released, a run settling: the reload blocks dispatch meanwhile) starts
// once the reload is over, whether the new configuration was taken or
// kept out. The drain used to run while the reload still blocked it, and
// a failed reload did not drain at all, so the input waited in the queue
// of an idle session until some other request came.
func TestInputsReleasedDuringAConfigReloadStartAfterIt(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		fails        bool
	}{
		{"taken", `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`, false},
		{"kept out", `{"providers":`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			write := func(name, body string) {
				if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			write("script.json", `{"turns":[{"match":"one","steps":[{"waitFile":"go"},{"text":"a1"}]},{"match":"two","steps":[{"text":"a2"}]}]}`)
			write("config.json", `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`)
			e, err := New(Options{DataRoot: root})
			if err != nil {
				t.Fatal(err)
			}
			// Runs and title work end before the temp dir is removed.
			defer e.Shutdown(context.Background(), Abort)
			s, err := e.NewSession("")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Prompt(PromptInput{RequestID: "1", Text: "one"}); err != nil {
				t.Fatal(err)
			}
			second, err := s.Prompt(PromptInput{RequestID: "2", Text: "two"})
			if err != nil || !second.Queued {
				t.Fatalf("%+v %v", second, err)
			}
			if _, err := s.Queue(QueueAction{ID: "2", Action: QueueBeginEdit}); err != nil {
				t.Fatal(err)
			}
			write("go", "")
			if err := s.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			// Background work the reload cancels and waits for: while it
			// waits, the reload is under way.
			cancelled, resume := make(chan struct{}), make(chan struct{})
			s.aux.start(func(ctx context.Context) {
				<-ctx.Done()
				close(cancelled)
				<-resume
			})
			write("config.json", tc.config)
			reloaded := make(chan error, 1)
			go func() { reloaded <- e.ReloadConfig(context.Background()) }()
			<-cancelled
			if _, err := s.Queue(QueueAction{ID: "2", Action: QueueCancelEdit}); err != nil {
				t.Fatal(err)
			}
			close(resume)
			if err := <-reloaded; (err != nil) != tc.fails {
				t.Fatalf("reload: %v", err)
			}
			if snap := s.Snapshot(); len(snap.State.Queue) != 0 {
				t.Fatalf("after the reload: operation %q, queue %d: the released input did not start", snap.Operation, len(snap.State.Queue))
			}
			if err := s.Wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := s.Snapshot().State.Messages; len(got) != 4 || got[3].Text() != "a2" {
				t.Fatalf("history after the reload: %d messages", len(got))
			}
		})
	}
}

// The same for a reload refused because another session is busy: the
// reload blocks dispatch from its start until it answers busy.
func TestInputsReleasedDuringARefusedConfigReloadStartAfterIt(t *testing.T) {
	root := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("script.json", `{"turns":[{"match":"one","steps":[{"waitFile":"go"},{"text":"a1"}]},{"match":"two","steps":[{"text":"a2"}]},{"match":"busy","steps":[{"hang":true}]}]}`)
	write("config.json", `{"providers":{"fake":{"api":"scripted","script":"script.json","models":[{"id":"m1"}]}}}`)
	e, err := New(Options{DataRoot: root})
	if err != nil {
		t.Fatal(err)
	}
	// Runs and title work end before the temp dir is removed.
	defer e.Shutdown(context.Background(), Abort)
	a, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.NewSession("")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(PromptInput{RequestID: "1", Text: "one"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Prompt(PromptInput{RequestID: "2", Text: "two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Queue(QueueAction{ID: "2", Action: QueueBeginEdit}); err != nil {
		t.Fatal(err)
	}
	write("go", "")
	if err := a.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Prompt(PromptInput{RequestID: "b", Text: "busy"}); err != nil {
		t.Fatal(err)
	}
	defer b.Abort(context.Background())
	// Holding b's lock stops the reload where it asks whether b is busy,
	// after it began.
	b.mu.Lock()
	reloaded := make(chan error, 1)
	go func() { reloaded <- e.ReloadConfig(context.Background()) }()
	for !e.isReloading() {
		time.Sleep(time.Millisecond)
	}
	if _, err := a.Queue(QueueAction{ID: "2", Action: QueueCancelEdit}); err != nil {
		b.mu.Unlock()
		t.Fatal(err)
	}
	b.mu.Unlock()
	if err := <-reloaded; CodeOf(err) != CodeBusy {
		t.Fatalf("reload with a busy session: %v", err)
	}
	if snap := a.Snapshot(); len(snap.State.Queue) != 0 {
		t.Fatalf("after the refused reload: operation %q, queue %d: the released input did not start", snap.Operation, len(snap.State.Queue))
	}
}
