// Package store is a small versioned key-value store with compressed JSON
// snapshots and an HTTP interface.
package store

import (
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"fpsafe/benchmarks/buildprog/internal/salt"
)

// Entry is one stored value.
type Entry struct {
	Value    string    `json:"value"`
	Version  int       `json:"version"`
	Modified time.Time `json:"modified"`
	Sum      string    `json:"sum"`
}

// Store is safe for concurrent use.
type Store struct {
	mu      sync.RWMutex
	entries map[string]Entry
}

// New returns an empty store.
func New() *Store { return &Store{entries: map[string]Entry{}} }

// Put stores value under key and returns its new version.
func (s *Store) Put(key, value string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entries[key]
	sum := sha256.Sum256([]byte(salt.Salt + value))
	e = Entry{Value: value, Version: e.Version + 1, Modified: time.Now().UTC(), Sum: hex.EncodeToString(sum[:8])}
	s.entries[key] = e
	return e.Version
}

// Get returns the entry for key.
func (s *Store) Get(key string) (Entry, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.entries[key]
	return e, ok
}

// Keys returns the keys with the given prefix, sorted.
func (s *Store) Keys(prefix string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var keys []string
	for k := range s.entries {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// Snapshot writes the store as gzip-compressed JSON.
func (s *Store) Snapshot(w io.Writer) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	zw := gzip.NewWriter(w)
	if err := json.NewEncoder(zw).Encode(s.entries); err != nil {
		return err
	}
	return zw.Close()
}

// Restore replaces the store's contents with a snapshot.
func (s *Store) Restore(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	m := map[string]Entry{}
	if err := json.NewDecoder(zr).Decode(&m); err != nil {
		return fmt.Errorf("store: restore: %w", err)
	}
	s.mu.Lock()
	s.entries = m
	s.mu.Unlock()
	return nil
}

// ServeHTTP implements GET and PUT on /kv/KEY and GET on /keys?prefix=P.
func (s *Store) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/keys":
		_ = json.NewEncoder(w).Encode(s.Keys(r.URL.Query().Get("prefix")))
	case strings.HasPrefix(r.URL.Path, "/kv/"):
		key := strings.TrimPrefix(r.URL.Path, "/kv/")
		switch r.Method {
		case http.MethodGet:
			e, ok := s.Get(key)
			if !ok {
				http.NotFound(w, r)
				return
			}
			_ = json.NewEncoder(w).Encode(e)
		case http.MethodPut:
			b, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%d\n", s.Put(key, string(b)))
		default:
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		}
	default:
		http.NotFound(w, r)
	}
}
