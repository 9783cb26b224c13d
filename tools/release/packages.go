package main

import (
	"errors"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"strings"
)

// A Package is one package a module offers to its users.
type Package struct {
	ImportPath string
	Main       bool
	Use        string // an exported name a consumer can refer to ("" if none)
	UseKind    token.Token
}

// Packages returns the packages of m that build for the current platform,
// leaving out internal packages, test-only directories and nested modules.
// Commands (package main) are included with Main set.
func Packages(r *Repo, m *Module) ([]Package, error) {
	var pkgs []Package
	moddir := r.AbsDir(m)
	err := walkModule(moddir, func(dir string, _ []string) error {
		rel, err := filepath.Rel(moddir, dir)
		if err != nil {
			return err
		}
		ip := path.Join(m.Path, filepath.ToSlash(rel))
		if isInternal(strings.TrimPrefix(ip, m.Path)) {
			return nil
		}
		bp, err := build.Default.ImportDir(dir, 0)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return err
		}
		if len(bp.GoFiles)+len(bp.CgoFiles) == 0 {
			return nil // tests only, or nothing for this platform
		}
		p := Package{ImportPath: ip, Main: bp.Name == "main"}
		if !p.Main {
			p.Use, p.UseKind, err = exportedName(dir, append(bp.GoFiles, bp.CgoFiles...))
			if err != nil {
				return err
			}
		}
		pkgs = append(pkgs, p)
		return nil
	})
	return pkgs, err
}

// exportedName picks an exported, non-generic, package-level name from the
// files: a function if there is one, else a type, a variable or a constant,
// the first in file order.
func exportedName(dir string, files []string) (string, token.Token, error) {
	best := map[token.Token]string{}
	fset := token.NewFileSet()
	for _, name := range files {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return "", 0, err
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() && d.Type.TypeParams == nil && best[token.FUNC] == "" {
					best[token.FUNC] = d.Name.Name
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() && s.TypeParams == nil && best[token.TYPE] == "" {
							best[token.TYPE] = s.Name.Name
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() && best[d.Tok] == "" {
								best[d.Tok] = n.Name
							}
						}
					}
				}
			}
		}
	}
	for _, kind := range []token.Token{token.FUNC, token.TYPE, token.VAR, token.CONST} {
		if best[kind] != "" {
			return best[kind], kind, nil
		}
	}
	return "", 0, nil
}
