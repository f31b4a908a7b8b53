package config

import (
	"reflect"
	"slices"
	"strings"
)

// The keys a Go type takes in YAML, read from its fields' yaml tags as the yaml package
// reads them: to list the known keys when one is not (unknownMsg) and to check a
// section that decodes itself (unknownKeys).

// knownKeys lists the yaml keys of the mapping at the dotted path below t, in field
// order, or the names a Plugins section knows; nil when the path leads to neither.
func knownKeys(t reflect.Type, path string) []string {
	if path != "" {
		for _, key := range strings.Split(reIndex.ReplaceAllString(path, ""), ".") {
			if t = childType(t, key); t == nil {
				return nil
			}
		}
	}
	if s, ok := sectionOf(t); ok {
		return s.pluginNames()
	}
	if t = structOf(t); t == nil {
		return nil
	}
	return keysOf(t, nil)
}

// childType is the type of the value at key in a mapping decoded into t; nil if unknown.
func childType(t reflect.Type, key string) reflect.Type {
	if s, ok := sectionOf(t); ok {
		return s.pluginEntry(key)
	}
	switch t = elemOf(t); t.Kind() {
	case reflect.Map:
		return t.Elem()
	case reflect.Struct:
		if f, ok := fieldByKey(t, key); ok {
			return f.Type
		}
	}
	return nil
}

// structOf is t without pointers, slices and arrays, if that is a struct; else nil.
func structOf(t reflect.Type) reflect.Type {
	if t = elemOf(t); t.Kind() != reflect.Struct {
		return nil
	}
	return t
}

// elemOf is t without pointers, slices and arrays: what a list's items decode into.
func elemOf(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	return t
}

// yamlTag returns the key of the struct field f as the yaml package reads it, and its
// options; ok is false for a field the yaml package ignores.
func yamlTag(f reflect.StructField) (key, opts string, ok bool) {
	if f.PkgPath != "" && !f.Anonymous {
		return "", "", false // unexported
	}
	key, opts, _ = strings.Cut(f.Tag.Get("yaml"), ",")
	if key == "-" {
		return "", "", false
	}
	if key == "" {
		key = strings.ToLower(f.Name)
	}
	return key, opts, true
}

func hasOpt(opts, opt string) bool {
	return slices.Contains(strings.Split(opts, ","), opt)
}

// keysOf appends t's yaml keys, inline structs' keys in their place.
func keysOf(t reflect.Type, keys []string) []string {
	for i := range t.NumField() {
		f := t.Field(i)
		key, opts, ok := yamlTag(f)
		switch {
		case !ok:
		case hasOpt(opts, "inline"):
			if st := structOf(f.Type); st != nil {
				keys = keysOf(st, keys)
			}
		default:
			keys = append(keys, key)
		}
	}
	return keys
}

// fieldByKey finds the field of t (or of its inline structs) whose yaml key is key.
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, ok := yamlTag(f)
		switch {
		case !ok:
		case hasOpt(opts, "inline"):
			if st := structOf(f.Type); st != nil {
				if g, ok := fieldByKey(st, key); ok {
					return g, true
				}
			}
		case name == key:
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// inlineMapElem is the element type of t's ",inline" map, which takes every key t has no
// field for; nil when t has none. As in the yaml package, the inline map of an inline
// struct takes nothing.
func inlineMapElem(t reflect.Type) reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		if _, opts, ok := yamlTag(f); ok && hasOpt(opts, "inline") && f.Type.Kind() == reflect.Map {
			return f.Type.Elem()
		}
	}
	return nil
}
