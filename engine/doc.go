// Package engine is Loop's session engine as a Go library: live sessions
// over the durable store, prompt runs that stream a model's answer and run
// its tools, the queue of inputs behind a run, approvals, abort, flush,
// prompt timings, titles and the model catalog read from config.json.
//
// It knows nothing of JSON-RPC. A front end calls Engine and Session
// methods, which return results or *Error values with stable codes, and
// subscribes to Events, which it maps onto its own notifications.
//
// Sessions come from NewInMemorySession (never written), CreateSession
// (persisted at once), NewSession (a draft, written with its first user
// message: what the JSON-RPC server uses), ContinueRecent, OpenPath (an
// exact session directory or header.json) and Session (by id); docs/sdk.md
// has the table.
//
// A minimal host:
//
//	e, _ := engine.New(engine.Options{DataRoot: dir, Demo: true})
//	e.Subscribe(func(ev engine.Event) { fmt.Println(ev.Kind) })
//	s, _ := e.NewSession("") // an independent draft
//	res, _ := s.Prompt(engine.PromptInput{RequestID: "r1", Text: "hello"})
//	_ = s.Wait(ctx)
//	_ = e.Shutdown(ctx, engine.Drain)
package engine
