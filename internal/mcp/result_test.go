package mcp

import (
	"strings"
	"testing"

	"github.com/loopdev/loop/convo"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
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
	want := []convo.Block{
		{Type: convo.BlockText, Text: "hello"},
		{Type: convo.BlockImage, Data: "AQID", MimeType: "image/gif"},
		{Type: convo.BlockText, Text: "[audio audio/wav, 2 bytes, not shown]"},
		{Type: convo.BlockText, Text: "[resource link file:///a.txt (a): the a file]"},
		{Type: convo.BlockText, Text: "[resource file:///b.txt]\nbee"},
		{Type: convo.BlockImage, Data: "CQ==", MimeType: "image/png"},
		{Type: convo.BlockText, Text: "[resource file:///d.bin application/zip, 2 bytes, not shown]"},
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
	if got := (Result{Content: []convo.Block{{Type: convo.BlockText, Text: "a"}, {Type: convo.BlockImage}, {Type: convo.BlockText, Text: "b"}}}).Text(); !strings.EqualFold(got, "a\nb") {
		t.Errorf("Text() = %q", got)
	}
}
