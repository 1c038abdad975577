/*
 * dlist.h - intrusive doubly-linked lists: a head pointer and prev/next
 * fields named per list. One way to link a node at the front and to unlink
 * it, whatever the list. The caller holds whatever lock guards the list.
 */
#ifndef RLMCP_HOST_DLIST_H
#define RLMCP_HOST_DLIST_H

#define DLIST_PUSH(head, node, prev, next)                                     \
    do {                                                                       \
        (node)->prev = NULL;                                                   \
        (node)->next = (head);                                                 \
        if ((head) != NULL)                                                    \
            (head)->prev = (node);                                             \
        (head) = (node);                                                       \
    } while (0)
#define DLIST_UNLINK(head, node, prev, next)                                   \
    do {                                                                       \
        if ((node)->prev != NULL)                                              \
            (node)->prev->next = (node)->next;                                 \
        else                                                                   \
            (head) = (node)->next;                                             \
        if ((node)->next != NULL)                                              \
            (node)->next->prev = (node)->prev;                                 \
    } while (0)

#endif
