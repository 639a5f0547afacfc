package remote

import (
	"context"
	"encoding/json"
	"errors"
	"net/url"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/cacheon/engine/release/store"
)

// What a registry serves that is not a referrers index rejects its
// contents; HTTP statuses, network failures and cancellations do not.
func TestContentsErrorClassifies(t *testing.T) {
	var syntax *json.SyntaxError
	junk := json.Unmarshal([]byte("{not json"), &struct{}{})
	if !errors.As(junk, &syntax) {
		t.Fatal("want a JSON syntax error")
	}
	for _, c := range []struct {
		name   string
		err    error
		reject bool
	}{
		{"junk index", junk, true},
		{"HTTP status", &transport.Error{StatusCode: 500}, false},
		{"network", &url.Error{Op: "Get", URL: "http://127.0.0.1:1", Err: errors.New("connection refused")}, false},
		{"cancelled", context.Canceled, false},
	} {
		if got := store.IsRejection(contentsError(c.err, "list")); got != c.reject {
			t.Errorf("%s: rejection %v, want %v", c.name, got, c.reject)
		}
	}
}
