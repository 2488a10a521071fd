/* list.h — intrusive doubly linked lists, systemd's list.h shape: an object is on a
 * list through two pointer fields of its own (named by the caller, so one object may be
 * on several lists), and the list is a pointer to its first object. O(1) prepend and
 * unlink, no allocation.
 *
 * Promises: LIST_PREPEND makes item the head; LIST_UNLINK takes item out wherever it
 * is, leaving head right when it was the first. Neither touches anything but the item,
 * its neighbours and head. Threads: the caller's (the lists are the owner thread's). */
#pragma once

#include <stddef.h>

/* put item first on the list at head (prev, next: its fields for this list) */
#define LIST_PREPEND(head, item, prev, next)          \
	do {                                          \
		(item)->prev = NULL;                  \
		(item)->next = (head);                \
		if (head)                             \
			(head)->prev = (item);        \
		(head) = (item);                      \
	} while (0)

/* take item off the list at head */
#define LIST_UNLINK(head, item, prev, next)              \
	do {                                             \
		if ((item)->prev)                        \
			(item)->prev->next = (item)->next; \
		else                                     \
			(head) = (item)->next;           \
		if ((item)->next)                        \
			(item)->next->prev = (item)->prev; \
	} while (0)
