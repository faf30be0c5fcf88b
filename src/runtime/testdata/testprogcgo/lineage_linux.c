// Copyright 2026 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

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

static volatile int lineageGoOn;

// lineageWaitingThread calls into Go, then runs C until Go lets it go on,
// then calls into Go again.
static void* lineageWaitingThread(void* arg) {
	GoLineageCallback(0);
	while (!__atomic_load_n(&lineageGoOn, __ATOMIC_ACQUIRE)) {
		usleep(1000);
	}
	GoLineageCallback(1);
	return NULL;
}

int lineageRunWaitingCThread(void) {
	pthread_t t;
	if (pthread_create(&t, NULL, lineageWaitingThread, NULL) != 0) {
		return -1;
	}
	return pthread_join(t, NULL);
}

void lineageLetCThreadGoOn(void) {
	__atomic_store_n(&lineageGoOn, 1, __ATOMIC_RELEASE);
}
