/* A heap that grows to a peak and shrinks, for valgrind's massif: a table grown by realloc
 * (doubling), 200 records of 1,000 bytes kept in a list, 2,000 small 24-byte strings, and
 * tiny allocations from many call sites that massif folds "below massif's threshold".
 * Recorded by tests/corpus/record_massif.sh (gcc -O0 -g -fno-inline grow.c).
 */
#include <stdlib.h>
#include <string.h>

struct record {
    struct record *next;
    char body[992];
};

static __attribute__((noinline)) struct record *add_record(struct record *head) {
    struct record *record = malloc(sizeof *record);
    memset(record->body, 'r', sizeof record->body);
    record->next = head;
    return record;
}

static __attribute__((noinline)) char *make_string(int i) {
    char *text = malloc(24);
    memset(text, 'a' + i % 26, 23);
    text[23] = 0;
    return text;
}

static __attribute__((noinline)) int *grow_table(int *table, size_t *capacity) {
    *capacity = *capacity ? *capacity * 2 : 16;
    return realloc(table, *capacity * sizeof *table);
}

#define TINY(n) static __attribute__((noinline)) void *tiny##n(void) { return malloc(8 + n); }
TINY(1) TINY(2) TINY(3) TINY(4) TINY(5) TINY(6)

int main(void) {
    struct record *records = NULL;
    static char *strings[2000];
    int *table = NULL;
    size_t capacity = 0, used = 0;
    void *(*tinies[])(void) = {tiny1, tiny2, tiny3, tiny4, tiny5, tiny6};
    for (int i = 0; i < 6; i++)
        tinies[i]();
    for (int i = 0; i < 200; i++) {
        records = add_record(records);
        strings[i * 10] = make_string(i);
        for (int j = 1; j < 10; j++)
            strings[i * 10 + j] = make_string(i + j);
        for (int k = 0; k < 100; k++) {
            if (used == capacity)
                table = grow_table(table, &capacity);
            table[used++] = i * k;
        }
    }
    for (int i = 0; i < 150; i++) {  /* shrink: free most records and strings */
        struct record *next = records->next;
        free(records);
        records = next;
    }
    for (int i = 0; i < 1500; i++)
        free(strings[i]);
    free(table);
    return 0;
}
