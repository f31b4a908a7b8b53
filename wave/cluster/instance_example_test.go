package cluster

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/binlake/binlake/internal/config"
)

const instanceExample = "../../deploy/instance.example.yaml"

// TestInstanceExample: deploy/instance.example.yaml, which `binlake instance add` takes
// as it is shipped, is a valid definition, and it explains every key an instance has:
// each key it sets has a comment on its line or above it, and a key it leaves out
// (start, whose presence changes where a capture begins) is shown commented out.
func TestInstanceExample(t *testing.T) {
	var inst Instance
	if err := config.Load(instanceExample, &inst); err != nil {
		t.Fatalf("the shipped example is not a valid instance: %v", err)
	}
	data, err := os.ReadFile(instanceExample)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{} // the key paths the file sets → whether each is commented
	commentedKeys(doc.Content[0], "", set)

	missing := exampleGaps(instanceKeys(reflect.TypeFor[Instance](), ""), set, string(data))
	for _, m := range missing {
		t.Error(m)
	}
}

// exampleGaps lists the keys of want that the example neither sets with a comment nor
// shows commented out ("# key:").
func exampleGaps(want []string, set map[string]bool, text string) []string {
	var gaps []string
	for _, k := range want {
		commented, ok := set[k]
		leaf := k[strings.LastIndex(k, ".")+1:]
		switch {
		case ok && !commented:
			gaps = append(gaps, instanceExample+": "+k+" has no comment saying what it is")
		case !ok && !regexp.MustCompile(`(?m)^#\s*(- )?`+regexp.QuoteMeta(leaf)+`:`).MatchString(text):
			gaps = append(gaps, instanceExample+": "+k+" is neither set nor shown commented out")
		}
	}
	return gaps
}

// TestInstanceExampleGaps: the check above finds a key without a comment, and a key
// neither set nor shown.
func TestInstanceExampleGaps(t *testing.T) {
	var doc yaml.Node
	text := "# the id\nid: x\nsource:   # where\n  addr: a:1\n  user: u\n# start:\n#   file: f\n"
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	commentedKeys(doc.Content[0], "", set)
	got := exampleGaps([]string{"id", "source", "source.addr", "start", "start.file", "start.pos"}, set, text)
	want := []string{
		instanceExample + ": source.addr has no comment saying what it is",
		instanceExample + ": start.pos is neither set nor shown commented out",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("gaps %q, want %q", got, want)
	}
}

// commentedKeys records, for each key path under n (list items add no index), whether
// the key has a comment: above it, on its line, or on its value's line.
func commentedKeys(n *yaml.Node, prefix string, out map[string]bool) {
	switch n.Kind {
	case yaml.SequenceNode:
		for _, item := range n.Content {
			commentedKeys(item, prefix, out)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			path := prefix + k.Value
			out[path] = out[path] || k.HeadComment != "" || k.LineComment != "" || v.LineComment != "" ||
				(v.Kind == yaml.SequenceNode && len(v.Content) > 0 && v.Content[0].LineComment != "")
			commentedKeys(v, path+".", out)
		}
	}
}

// instanceKeys lists the yaml key paths of t, a struct, as the yaml package decodes them
// (fields tagged "-" are not keys); the keys of a list's items go under the list's key.
func instanceKeys(t reflect.Type, prefix string) []string {
	var keys []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		keys = append(keys, prefix+name)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			keys = append(keys, instanceKeys(ft, prefix+name+".")...)
		}
	}
	return keys
}
