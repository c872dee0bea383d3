package engine

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/loopdev/loop/convo"
	"github.com/loopdev/loop/store"
)

// Skill is a folder with a SKILL.md: a name, a description for the
// composer, and instructions that expand into the model's input when a
// prompt names the skill.
type Skill struct {
	Name        string
	Description string
	Source      string // workspace or global
	// Instructions stay out of listings; they are read when a prompt names
	// the skill.
	path string
}

// skillDirs are searched in order; the first skill of a name wins.
func (e *Engine) skillDirs(cwd string) []struct{ dir, source string } {
	var out []struct{ dir, source string }
	if cwd != "" {
		out = append(out, struct{ dir, source string }{store.WorkspaceSkills(cwd), "workspace"})
	}
	out = append(out, struct{ dir, source string }{e.root.Layout().Skills(), "global"})
	return out
}

// Skills lists the skills visible from a workspace ("" for independent
// chats: the data root's only).
func (e *Engine) Skills(workspaceID string) ([]Skill, error) {
	ws, err := e.checkScope(workspaceID)
	if err != nil {
		return nil, err
	}
	return e.skillsIn(ws.Cwd), nil
}

func (e *Engine) skillsIn(cwd string) []Skill {
	var out []Skill
	seen := map[string]bool{}
	for _, d := range e.skillDirs(cwd) {
		entries, err := os.ReadDir(d.dir)
		if err != nil {
			continue
		}
		for _, ent := range entries {
			p := filepath.Join(d.dir, ent.Name(), "SKILL.md")
			sk, ok := readSkillHeader(p)
			if !ok {
				continue
			}
			if sk.Name == "" {
				sk.Name = ent.Name()
			}
			if seen[sk.Name] {
				continue
			}
			seen[sk.Name] = true
			sk.Source, sk.path = d.source, p
			out = append(out, sk)
		}
	}
	slices.SortFunc(out, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readSkillHeader reads the front matter (name, description) of SKILL.md.
func readSkillHeader(path string) (Skill, bool) {
	f, err := os.Open(path)
	if err != nil {
		return Skill{}, false
	}
	defer f.Close()
	var sk Skill
	sc := bufio.NewScanner(f)
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "---" {
		return sk, true
	}
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "---" {
			break
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		switch strings.TrimSpace(k) {
		case "name":
			sk.Name = v
		case "description":
			sk.Description = v
		}
	}
	return sk, true
}

// skillBody returns SKILL.md without its front matter.
func skillBody(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	s := string(data)
	if strings.HasPrefix(s, "---") {
		if i := strings.Index(s[3:], "\n---"); i >= 0 {
			s = s[3+i+4:]
		}
	}
	return strings.TrimSpace(s)
}

// checkSkills reports the first named skill that does not exist. It reads
// the skill folders: call it without the session lock.
func (s *Session) checkSkills(names []string) error {
	if len(names) == 0 {
		return nil
	}
	return checkSkillsIn(s.e.skillsIn(s.skillCwd()), names)
}

// checkSkillsIn is checkSkills against skills already read.
func checkSkillsIn(have []Skill, names []string) error {
	for _, n := range names {
		if !slices.ContainsFunc(have, func(sk Skill) bool { return sk.Name == n }) {
			return errorf(CodeInvalidParams, "no skill named %q", n)
		}
	}
	return nil
}

func (s *Session) skillCwd() string {
	if s.workspaceID == "" {
		return ""
	}
	return s.cwd
}

// expandSkills returns a copy of a user message whose named skills'
// instructions come first. Only model input sees it; history keeps the
// message as the user wrote it.
func (s *Session) expandSkills(m convo.Message, have []Skill) convo.Message {
	var blocks []convo.Block
	for _, n := range m.Skills {
		i := slices.IndexFunc(have, func(sk Skill) bool { return sk.Name == n })
		if i < 0 {
			continue
		}
		blocks = append(blocks, convo.Block{Type: convo.BlockText, Text: "Use the skill \"" + n + "\" for this request. Its instructions:\n\n" + skillBody(have[i].path)})
	}
	m.Content = append(blocks, m.Content...)
	return m
}
