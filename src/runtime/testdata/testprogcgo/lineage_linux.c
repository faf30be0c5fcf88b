// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include <pthread.h>
#include <stddef.h>

extern void GoLineageCallback(int);

static void* lineageThread(void* arg) {
	GoLineageCallback(0);
	GoLineageCallback(1);
	return NULL;
}

int lineageRunCThread(void) {
	pthread_t t;
	if (pthread_create(&t, NULL, lineageThread, NULL) != 0) {
		return -1;
	}
	return pthread_join(t, NULL);
}
