// Package localhost guards the HTTP servers herdlab runs on a user's
// machine for the user alone (herdlab ui, and the control endpoint of
// herdlab serve) from the web pages the user visits: a page of another
// origin may send requests to them, and a page whose name it rebinds to
// 127.0.0.1 (DNS rebinding) may read their answers.
//
// Guard refuses, with 403 Forbidden and the reason:
//   - a Host that is neither a loopback name or address (localhost,
//     127.0.0.0/8, ::1, with or without a port) nor the address the
//     server listens on (any of this machine's addresses when it listens
//     on all of them, 0.0.0.0 or ::): a rebound name is neither;
//   - a request of an unsafe method (POST...) from a page of another
//     origin, as the standard library's http.CrossOriginProtection tells
//     it (by Sec-Fetch-Site, or Origin against Host);
//
// and, with 415 Unsupported Media Type, a body of an unsafe method that
// is not application/json (a form or text/plain, which a page of any
// origin may send without asking). Requests without Origin (curl,
// Prometheus, herdlab replay) pass when their Host does.
package localhost

import (
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
)

// Guard returns next behind the checks of the package's doc, for a
// server listening on addr (host:port, as net.Listener.Addr gives it;
// "" for loopback only). It is safe for concurrent use.
func Guard(next http.Handler, addr string) http.Handler {
	g := &guard{next: next, cross: http.NewCrossOriginProtection(), allowed: map[string]bool{}}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Every address of this machine reaches the server.
		if addrs, err := net.InterfaceAddrs(); err == nil {
			for _, a := range addrs {
				if n, ok := a.(*net.IPNet); ok {
					g.allowed[n.IP.String()] = true
				}
			}
		}
	} else if host != "" {
		g.allowed[canonical(host)] = true
	}
	return g
}

type guard struct {
	next    http.Handler
	cross   *http.CrossOriginProtection
	allowed map[string]bool // hosts beside loopback, canonical
}

func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.hostAllowed(r.Host) {
		refuse(w, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's address: a server for this machine alone answers only requests addressed to localhost, a loopback address or the address it listens on (a page of another site may rebind its name to this machine)", r.Host))
		return
	}
	if err := g.cross.Check(r); err != nil {
		refuse(w, http.StatusForbidden, fmt.Sprintf("a request from a page of another origin (%s): only this server's own page may send it (%v)", originOf(r), err))
		return
	}
	if !safe(r.Method) && r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			refuse(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: the body must be application/json", r.Header.Get("Content-Type")))
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// hostAllowed tells whether host (a Host header: name or address, with
// or without a port) names this server.
func (g *guard) hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = canonical(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"))
	if host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return g.allowed[host]
}

// canonical is host in lower case without a final dot; an address in its
// standard form.
func canonical(host string) string {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if ip := net.ParseIP(host); ip != nil {
		return ip.String()
	}
	return host
}

func safe(method string) bool {
	return method == http.MethodGet || method == http.MethodHead || method == http.MethodOptions
}

func originOf(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" {
		return "Origin " + o
	}
	return "Sec-Fetch-Site " + r.Header.Get("Sec-Fetch-Site")
}

// refuse answers {"error": reason} with code.
func refuse(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": reason})
}
