package localhost

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGuard(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	tests := []struct {
		name, listen, method, host, origin, site, ctype, body string
		want                                                  int
		why                                                   string
	}{
		{name: "loopback GET", method: "GET", host: "127.0.0.1:8090", want: 204},
		{name: "localhost", method: "GET", host: "localhost:8090", want: 204},
		{name: "localhost, no port, final dot, capitals", method: "GET", host: "LocalHost.", want: 204},
		{name: "127/8", method: "GET", host: "127.3.4.5", want: 204},
		{name: "::1", method: "GET", host: "[::1]:8090", want: 204},
		{name: "rebound name", method: "GET", host: "rebind.example", want: 403, why: "is not this server's address"},
		{name: "rebound name with the port", method: "GET", host: "rebind.example:8090", want: 403, why: "is not this server's address"},
		{name: "a name ending in localhost", method: "GET", host: "evil-localhost", want: 403},
		{name: "no Host", method: "GET", host: "", want: 403},
		{name: "another address", method: "GET", host: "10.1.2.3:8090", want: 403},
		{name: "the address listened on", listen: "10.1.2.3:8090", method: "GET", host: "10.1.2.3:8090", want: 204},
		{name: "another address than the one listened on", listen: "10.1.2.3:8090", method: "GET", host: "10.1.2.4:8090", want: 403},
		{name: "same-origin JSON", method: "POST", host: "127.0.0.1:8090", origin: "http://127.0.0.1:8090", site: "same-origin", ctype: "application/json", body: "{}", want: 204},
		{name: "JSON with a charset", method: "POST", host: "127.0.0.1:8090", ctype: "application/json; charset=utf-8", body: "{}", want: 204},
		{name: "no Origin (curl)", method: "POST", host: "127.0.0.1:8090", ctype: "application/json", body: "{}", want: 204},
		{name: "an empty body needs no type", method: "POST", host: "127.0.0.1:8090", want: 204},
		{name: "cross-origin text/plain", method: "POST", host: "127.0.0.1:8090", origin: "http://evil.example", site: "cross-site", ctype: "text/plain", body: "{}", want: 403, why: "another origin"},
		{name: "cross-origin JSON, old browser", method: "POST", host: "127.0.0.1:8090", origin: "http://evil.example", ctype: "application/json", body: "{}", want: 403, why: "another origin"},
		{name: "another port is another origin", method: "POST", host: "127.0.0.1:8090", origin: "http://127.0.0.1:9999", ctype: "application/json", body: "{}", want: 403},
		{name: "same-origin text/plain", method: "POST", host: "127.0.0.1:8090", ctype: "text/plain", body: "{}", want: 415, why: "must be application/json"},
		{name: "a form", method: "POST", host: "127.0.0.1:8090", ctype: "application/x-www-form-urlencoded", body: "a=b", want: 415},
		{name: "no type", method: "POST", host: "127.0.0.1:8090", body: "{}", want: 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, "http://x/api/run", strings.NewReader(tt.body))
			req.Host = tt.host
			for k, v := range map[string]string{"Origin": tt.origin, "Sec-Fetch-Site": tt.site, "Content-Type": tt.ctype} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			rec := httptest.NewRecorder()
			Guard(ok, tt.listen).ServeHTTP(rec, req)
			require.Equal(t, tt.want, rec.Code, rec.Body.String())
			if tt.want != 204 {
				var answer struct{ Error string }
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &answer))
				assert.Contains(t, answer.Error, tt.why)
			}
		})
	}
}

func TestGuardOnAllAddresses(t *testing.T) {
	// Listening on 0.0.0.0, the machine's own addresses are allowed, and
	// a name still is not.
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	g := Guard(ok, "0.0.0.0:8090").(*guard)
	assert.NotEmpty(t, g.allowed)
	for host := range g.allowed {
		assert.True(t, g.hostAllowed(host), host)
	}
	assert.False(t, g.hostAllowed("rebind.example:8090"))
}
