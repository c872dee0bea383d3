package store_test

import (
	"fmt"
	"os"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// A program can create, commit and read sessions without the engine.
func Example() {
	dir, _ := os.MkdirTemp("", "loop-store-example")
	defer os.RemoveAll(dir)
	root, err := store.OpenRoot(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	ws, _ := root.AddWorkspace(dir, "example")
	s, err := root.Create(ws.ID, dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	msgs := []convo.Message{
		{Role: convo.RoleUser, Content: []convo.Block{{Type: convo.BlockText, Text: "hello"}}, Timestamp: 1},
	}
	if err := s.Commit(msgs, nil, nil); err != nil {
		fmt.Println(err)
		return
	}
	id := s.ID()
	s.Close()

	again, err := root.Open(ws.ID, id)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer again.Close()
	for _, m := range again.Messages() {
		fmt.Println(m.Role, m.Content[0].Text)
	}
	list, _ := root.List(ws.ID, store.ListOptions{})
	fmt.Println(len(list), "listed")
	// Output:
	// user hello
	// 1 listed
}
