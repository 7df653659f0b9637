/* The relative clock: seconds since start, as memcached keeps it (rel_time_t), refreshed by the
 * workers once per epoll batch; items, the LRU and `stats` read it. */
#include <time.h>
#include "cache.h"

rel_time_t current_time;
time_t process_started;
static time_t mono_started;

void clock_update(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    rel_time_t now = (rel_time_t)(ts.tv_sec - mono_started) + ITEM_UPDATE_INTERVAL + 2;
    if (LOAD(current_time) != now)
        STORE(current_time, now);
}

/* memcached's realtime(): 0 = never, <= 30 days = relative, more = a unix time */
rel_time_t realtime(long exptime)
{
    if (exptime == 0)
        return 0;
    if (exptime < 0)
        return 1;
    if (exptime > REALTIME_MAXDELTA) {
        if (exptime <= process_started)
            return 1;
        return (rel_time_t)(exptime - process_started);
    }
    return (rel_time_t)(exptime + LOAD(current_time));
}

void clock_init(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    mono_started = ts.tv_sec;
    /* like memcached, start the relative clock past 0 so that "1" always means expired */
    process_started = time(NULL) - ITEM_UPDATE_INTERVAL - 2;
    clock_update();
}
