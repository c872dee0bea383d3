package rpc

import (
	"context"

	"github.com/loopdev/loop/engine"
	"github.com/loopdev/loop/rpc/internal/native"
)

// Forks, rewinds and edits (docs/protocol.md, "Forks and rewinds"): idle
// commands of the engine (engine/fork.go), served inline, in request
// order, so that a prompt sent after one sees its result.

func (s *Server) sessionFork(_ context.Context, p *native.SessionForkParams) (*native.Snapshot, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	n, err := safeCount("messageCount", p.MessageCount)
	if err != nil {
		return nil, err
	}
	// The engine takes "" for the parent's title; on the wire that is an
	// absent title, and a given one that is empty once normalized is
	// refused as session/set_title refuses it, not taken as absent.
	title := ""
	if p.Title != nil {
		if title = engine.NormalizeTitle(*p.Title); title == "" {
			return nil, invalidParams("title is empty")
		}
	}
	f, err := sess.Fork(n, title)
	if err != nil {
		return nil, err
	}
	return snapshotResult(f.Snapshot()), nil
}

func (s *Server) sessionRewind(ctx context.Context, p *native.SessionRewindParams) (*native.RewindResult, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	n, err := safeCount("messageCount", p.MessageCount)
	if err != nil {
		return nil, err
	}
	files, err := optionalBool("files", p.Files, false)
	if err != nil {
		return nil, err
	}
	snap, forkID, err := sess.Rewind(ctx, n, files)
	if err != nil {
		return nil, err
	}
	return &native.RewindResult{Snapshot: snapshotResult(snap), ForkedID: forkID}, nil
}

func (s *Server) sessionEdit(_ context.Context, p *native.SessionEditParams) (*native.EditResult, error) {
	sess, err := s.session(&p.SessionParams)
	if err != nil {
		return nil, err
	}
	idx, err := safeCount("userMessageIndex", p.UserMessageIndex)
	if err != nil {
		return nil, err
	}
	if err := required("requestId", p.RequestID); err != nil {
		return nil, err
	}
	files, err := engineFiles(p.Files)
	if err != nil {
		return nil, err
	}
	res, err := sess.Edit(idx, engine.PromptInput{
		RequestID: p.RequestID, Text: string(p.Text), Images: native.EngineImages(p.Images), Files: files, Skills: p.Skills, StreamID: p.StreamID,
		Approver: approver{s},
	})
	if err != nil {
		return nil, err
	}
	return &native.EditResult{PromptResult: *promptResult(res.PromptResult), ForkedID: res.ForkedID}, nil
}
