package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
)

// KeyPrefixes are the prefixes of the names of label, annotation and finalizer keys.
var KeyPrefixes = []string{"Label", "Annotation", "Finalizer"}

// KeyHomes are the module-relative folders that may declare a key: the API packages, each for its own group
// (the worker's apis/worker/v1 for every key of the product's, as k8s.io/api/core/v1 keeps Kubernetes' own).
var KeyHomes = []string{"apis/"}

// MisplacedKeys returns "file: Name" for each constant declared in src (a Go file's source, at the
// module-relative path file) whose name says it is a label, annotation or finalizer key but which lives outside
// KeyHomes. Only the product's code is held to it: tests and the test and build tools (test/, hack/) declare
// their own keys as they like.
func MisplacedKeys(file string, src []byte) ([]string, error) {
	file = filepath.ToSlash(file)
	if strings.HasSuffix(file, "_test.go") || strings.HasPrefix(file, "test/") || strings.HasPrefix(file, "hack/") {
		return nil, nil
	}
	for _, home := range KeyHomes {
		if strings.HasPrefix(file, home) {
			return nil, nil
		}
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			for _, name := range spec.(*ast.ValueSpec).Names {
				for _, p := range KeyPrefixes {
					if strings.HasPrefix(name.Name, p) {
						out = append(out, file+": "+name.Name)
					}
				}
			}
		}
	}
	return out, nil
}
