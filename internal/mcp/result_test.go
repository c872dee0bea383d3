package mcp

import (
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loopdev/loop/store"
)

func TestConvertResult(t *testing.T) {
	res := convertResult(&sdk.CallToolResult{
		IsError: true,
		Content: []sdk.Content{
			&sdk.TextContent{Text: "hello"},
			&sdk.ImageContent{Data: []byte{1, 2, 3}, MIMEType: "image/gif"},
			&sdk.AudioContent{Data: []byte{1, 2}, MIMEType: "audio/wav"},
			&sdk.ResourceLink{URI: "file:///a.txt", Name: "a", Description: "the a file"},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///b.txt", Text: "bee"}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///c.png", MIMEType: "image/png", Blob: []byte{9}}},
			&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///d.bin", MIMEType: "application/zip", Blob: []byte{9, 9}}},
		},
	})
	if !res.IsError {
		t.Error("IsError lost")
	}
	want := []store.Block{
		{Type: store.BlockText, Text: "hello"},
		{Type: store.BlockImage, Data: "AQID", MimeType: "image/gif"},
		{Type: store.BlockText, Text: "[audio audio/wav, 2 bytes, not shown]"},
		{Type: store.BlockText, Text: "[resource link file:///a.txt (a): the a file]"},
		{Type: store.BlockText, Text: "[resource file:///b.txt]\nbee"},
		{Type: store.BlockImage, Data: "CQ==", MimeType: "image/png"},
		{Type: store.BlockText, Text: "[resource file:///d.bin application/zip, 2 bytes, not shown]"},
	}
	if len(res.Content) != len(want) {
		t.Fatalf("content = %+v", res.Content)
	}
	for i := range want {
		if res.Content[i].Type != want[i].Type || res.Content[i].Text != want[i].Text || res.Content[i].Data != want[i].Data || res.Content[i].MimeType != want[i].MimeType {
			t.Errorf("block %d = %+v, want %+v", i, res.Content[i], want[i])
		}
	}

	structured := convertResult(&sdk.CallToolResult{StructuredContent: map[string]any{"n": 1}})
	if len(structured.Content) != 1 || structured.Content[0].Text != `{"n":1}` {
		t.Errorf("structured-only result = %+v", structured)
	}
	if got := (Result{Content: []store.Block{{Type: store.BlockText, Text: "a"}, {Type: store.BlockImage}, {Type: store.BlockText, Text: "b"}}}).Text(); !strings.EqualFold(got, "a\nb") {
		t.Errorf("Text() = %q", got)
	}
}
