// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

//go:build amd64 || arm64

#include <pthread.h>

extern void goFPChainCallback(void);
extern void fpchain_call_bad_fp(void (*)(void));

static void* fpchain_thread(void* arg) {
	fpchain_call_bad_fp(goFPChainCallback);
	return 0;
}

// fpchain_on_c_thread calls back into Go on a thread that C created.
void fpchain_on_c_thread(void) {
	pthread_t t;
	pthread_create(&t, 0, fpchain_thread, 0);
	pthread_join(t, 0);
}

// fpchain_go_callback calls back into Go on the calling (Go) thread.
void fpchain_go_callback(void) {
	fpchain_call_bad_fp(goFPChainCallback);
}
