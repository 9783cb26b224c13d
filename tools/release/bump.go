package main

import (
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// bump sets every requirement on a module of the repository, in every
// go.mod, to version v, and prints each change. The replace directives stay.
func bump(r *Repo, v string, stdout io.Writer) error {
	if err := CheckVersion(v); err != nil {
		return err
	}
	changed, err := Bump(r, v)
	if err != nil {
		return err
	}
	for _, c := range changed {
		fmt.Fprintln(stdout, c)
	}
	if len(changed) == 0 {
		fmt.Fprintf(stdout, "every requirement already names %s\n", v)
	}
	return nil
}

// Bump rewrites the go.mod files of r so that every requirement on a module
// of the repository names v. It returns a line per requirement it changed.
func Bump(r *Repo, v string) ([]string, error) {
	var changed []string
	found := false
	for _, m := range r.Modules {
		var edits []string
		for _, req := range m.File.Require {
			if r.ByPath(req.Mod.Path) == nil {
				continue
			}
			found = true
			if req.Mod.Version != v {
				edits = append(edits, req.Mod.Path)
				changed = append(changed, fmt.Sprintf("%s: %s %s -> %s",
					path.Join(m.Dir, "go.mod"), req.Mod.Path, req.Mod.Version, v))
			}
		}
		if len(edits) == 0 {
			continue
		}
		for _, p := range edits {
			if err := m.File.AddRequire(p, v); err != nil {
				return nil, err
			}
		}
		m.File.Cleanup()
		data, err := m.File.Format()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(r.AbsDir(m), "go.mod"), data, 0o644); err != nil {
			return nil, err
		}
		m.Data = data
	}
	if !found {
		return nil, errNoVersionBumps
	}
	return changed, nil
}
