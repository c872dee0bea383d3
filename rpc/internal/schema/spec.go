// Package schema describes a JSON-RPC protocol from its Go types: it reads
// the params, results and notifications a Spec lists by reflection and
// prints them as one JSON Schema document (draft 2020-12) or as
// TypeScript declarations. `loop protocol schema` and `loop protocol ts`
// print the native dialect's (docs/protocol.md, "For client authors"), so
// what a client is told is what the running binary encodes and decodes.
//
// The package knows no method names: the caller (rpc/protocolspec.go)
// hands it the table. Nothing here runs until a description is asked for.
package schema

import "reflect"

// Spec is a protocol to describe.
type Spec struct {
	// Title names the protocol in the schema's title.
	Title string
	// Methods are the requests a client sends.
	Methods []Method
	// ServerRequests are the requests the server sends to the client; a
	// method's Result is then what the client answers.
	ServerRequests []Method
	// Notifications are what the server sends without an id.
	Notifications []Notification
	// ClientNotifications are what a client may send without an id.
	ClientNotifications []Notification
	// Errors are every error's data.code with its JSON-RPC integer.
	Errors []ErrorCode
	// Overrides say what a type, or one member of a struct, is on the
	// wire when its Go shape does not say it (a custom UnmarshalJSON, a
	// string with a closed set of values).
	Overrides []Override
}

// Method is one request: its name and the Go types of its params and of
// its result.
type Method struct {
	Name   string
	Params reflect.Type
	Result reflect.Type
	// OrResults are other shapes the result takes (session/queue answers
	// a begin-edit with its item and everything else with the snapshot).
	OrResults []reflect.Type
}

// Notification is one notification: its name and its params' Go type.
type Notification struct {
	Name   string
	Params reflect.Type
}

// ErrorCode is one error's data.code and the JSON-RPC integer code that
// goes with it.
type ErrorCode struct {
	Code    string
	Integer int64
}

// Override replaces what reflection would say of a type (Field empty) or
// of one member of a struct type (Field is its JSON name). With Name, the
// replacement becomes a definition of its own that every use refers to.
// With As instead of a Schema, the member is read as that Go type: one
// kept raw and decoded later (initialize's capabilities).
// Without a Schema and with Open, a struct type is read as usual but
// its object admits members it does not declare (initialize's
// capabilities, where a client names what it can do).
type Override struct {
	Type   reflect.Type
	Field  string
	Name   string
	Schema *Type
	As     reflect.Type
	Open   bool
}

// Kind is the JSON shape of a Type.
type Kind int

// The shapes.
const (
	KindAny Kind = iota
	KindBoolean
	KindInteger
	KindNumber
	KindString
	KindArray
	KindMap
	KindObject
	KindRef
	KindUnion
)

// Type is one JSON value's description, the model both outputs print.
type Type struct {
	Kind     Kind
	Nullable bool     // null is a value too
	Enum     []string // KindString: the only values
	Format   string   // KindString: a JSON Schema format, such as date-time
	Elem     *Type    // KindArray: the items; KindMap: the values
	Fields   []Field  // KindObject, in the order they are written
	Open     bool     // KindObject: members it does not declare are allowed
	Ref      string   // KindRef: the definition's name
	Of       []*Type  // KindUnion: one of these
}

// Field is one member of an object.
type Field struct {
	Name     string
	Type     *Type
	Optional bool // the member may be absent
}

// Any is any JSON value.
func Any() *Type { return &Type{Kind: KindAny} }

// Boolean is true or false.
func Boolean() *Type { return &Type{Kind: KindBoolean} }

// Integer is a JSON number without a fraction.
func Integer() *Type { return &Type{Kind: KindInteger} }

// Number is any JSON number.
func Number() *Type { return &Type{Kind: KindNumber} }

// String is any string.
func String() *Type { return &Type{Kind: KindString} }

// Enum is a string that is one of values.
func Enum(values ...string) *Type { return &Type{Kind: KindString, Enum: values} }

// Ref refers to a definition by name (an Override's Name, or the name
// of an error code list: "ErrorCode").
func Ref(name string) *Type { return &Type{Kind: KindRef, Ref: name} }

// OneOf is a value of one of ts.
func OneOf(ts ...*Type) *Type { return &Type{Kind: KindUnion, Of: ts} }

// ArrayOf is an array of t (never null).
func ArrayOf(t *Type) *Type { return &Type{Kind: KindArray, Elem: t} }

// Nullable is t, or null.
func Nullable(t *Type) *Type {
	c := *t
	c.Nullable = true
	return &c
}

// ErrorCodeDef is the name of the definition listing every data.code.
const ErrorCodeDef = "ErrorCode"
