/*
 * pgfslab-disk: an emulated magnetic disk with one head, served as a single file over FUSE.
 *
 * The lab attaches a loop device (direct I/O) to <mountpoint>/disk and puts the target's file system
 * on it. Every read and write of that file reaches this daemon, which serves them one at a time, in
 * the order the kernel queued them (the daemon is single-threaded: the kernel's FUSE request queue is
 * the disk's one queue, shared by reads and writes). Each request costs what the model says
 * (pgfslab/config/disk_model.py computes the parameters from a named drive's datasheet):
 *
 *   sequential (starts where the previous request ended) and either a read (the drive's read-ahead has
 *              it) or already queued when the previous one completed (the head is on its sector):
 *              transfer only;
 *   otherwise: command overhead + seek(distance in cylinders, read or write curve) + rotational wait
 *              (deterministic: the platter's angle is the monotonic clock modulo one revolution, the
 *              target sector's angle follows from its offset on the zoned track layout) + transfer at
 *              the zone's media rate.
 *
 * The data itself is read from / written to the backing file with pread/pwrite before the reply, and
 * the reply is sent at the modelled completion time (clock_nanosleep to an absolute deadline computed
 * from when the request was picked up, so the daemon's own work and the backing I/O are inside the
 * modelled time, not added to it). With the write cache off (the default) a write completes only when
 * the backing file has it.
 *
 * <mountpoint>/stats is a text file of counters ("name value" lines) for the lab: requests, bytes,
 * service time split into overhead/seek/rotation/transfer, the head's busy time per direction, the
 * time it waited for work, how many requests were already queued when the head became free, and the
 * daemon's own CPU time. With --series FILE one CSV line per second of the same counters' increments.
 *
 * --trace: no FUSE; read "r|w offset length time_ns queued(0|1)" lines from stdin and print each request's modelled
 * service (overhead seek rotation transfer, in ns): the lab's tests compare it with the Python model.
 */
#define FUSE_USE_VERSION 34
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define INO_DISK 2
#define INO_STATS 3
#define MAX_IO (1u << 20) /* the kernel's FUSE request limit (256 pages) */
/* a request the receive found already waiting (no wait for it) was queued when the previous one completed
 * and the head goes on without pausing, unless that was long ago (other requests, e.g. of the stats file,
 * were served in between); the bound covers the kernel's copy of a 1 MiB write into this process */
#define BACKLOG_NS 2000000LL

typedef struct {
    double a, b, c, e, n0; /* seek(n) = a + b sqrt(n) for n <= n0 cylinders, c + e n beyond (ms) */
} seek_curve;

typedef struct {
    /* geometry */
    double rev_ns;      /* one revolution */
    double overhead_ns; /* command overhead of a non-sequential request */
    double rate_outer;  /* media rate at the outer edge, bytes/s */
    double k;           /* 1 - inner rate / outer rate: the rate falls linearly with the radius */
    double span;        /* share of the full stroke the file covers, from the outer edge */
    double cylinders;   /* cylinders across the full stroke (the seek curve's distance unit) */
    double tracks;      /* revolutions of the file's media across the full stroke (the angle's unit) */
    seek_curve seek_read, seek_write;
    int write_cache;
    /* state */
    uint64_t size;   /* the file's size */
    double q_scale;  /* B(span): the bytes of the span, in units of rate_outer */
    int64_t head_end; /* offset just past the previous request (-1: none yet) */
    double head_x;   /* radial position of the head (0 outer edge .. 1 inner) */
} model;

typedef struct {
    uint64_t requests, reads, writes, flushes, read_bytes, write_bytes;
    uint64_t sequential, seeks, same_cylinder;
    uint64_t overhead_ns, seek_ns, rotation_ns, transfer_ns;
    uint64_t read_service_ns, write_service_ns;
    uint64_t read_busy_ns, write_busy_ns;
    uint64_t queued, queued_reads, reads_after_write;
    uint64_t late, late_ns;
    uint64_t backing_errors;
} counters;

static model M;
static counters C, C_last;
static int backing_fd = -1;      /* O_DIRECT unless --buffered: the host's page cache holds none of it */
static int backing_buffered = -1; /* for requests O_DIRECT cannot take (not sector-aligned) */
static int discard;               /* --discard: no backing I/O (the emulation's own cost, measured alone) */
static int64_t wake_ns = 50000;   /* how late clock_nanosleep wakes up (moving average): aimed off */
static char *iobuf;
static struct fuse_session *session;
static FILE *series;
static int64_t t_start, t_last_reply, t_next_series;
static int64_t t_last_done; /* when the head finished the last request: its deadline, or later if it overran */
static int next_queued; /* a request was waiting in the kernel's queue when the last reply was sent */
static int fuse_fd = -1;
static int last_was_write;
static char stats_text[8192];

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* sleep until `aim` (the caller aims early by the usual delay between the aim and its reply going out: the
 * timer's wake-up, a few tens of microseconds on a VM, and the poll before the reply), so that replies leave
 * on time on average instead of always late by that delay */
static void sleep_until(int64_t aim) {
    if (aim <= now_ns()) return;
    struct timespec ts = {.tv_sec = aim / 1000000000LL, .tv_nsec = aim % 1000000000LL};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("pgfslab-disk: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

/* --- the model ---------------------------------------------------------------------------------- */

/* radial position (0 = outer edge, span = the file's end) of a byte offset: the bytes between the
 * outer edge and x are proportional to B(x) = x - k x^2 / 2 (a zone's capacity per cylinder is
 * proportional to its rate) */
static double radial(double offset) {
    double q = offset / (double)M.size * M.q_scale;
    if (M.k < 1e-9) return q;
    double disc = 1.0 - 2.0 * M.k * q;
    return (1.0 - sqrt(disc > 0 ? disc : 0)) / M.k;
}

static double rate_at(double x) { return M.rate_outer * (1.0 - M.k * x); }

static double seek_ms(const seek_curve *s, double n) {
    if (n < 1.0) return 0.0;
    return n <= s->n0 ? s->a + s->b * sqrt(n) : s->c + s->e * n;
}

typedef struct {
    double overhead, seek, rotation, transfer; /* ns */
    int sequential, same_cylinder;
} service;

/* the service of one request starting at `t` (ns, monotonic) that was (`queued`) or was not already waiting
 * when the previous one completed: also moves the head */
static service model_request(int is_write, uint64_t offset, uint64_t len, int64_t t, int queued) {
    service s = {0};
    double x = radial((double)offset);
    double x_end = radial((double)(offset + len));
    double mid = 0.5 * (x + x_end);
    s.transfer = (double)len / rate_at(mid) * 1e9;
    /* a write that continues the previous one but came after it completed finds its sector passed:
     * without a write cache it waits for it to come round again, as any other request */
    if (M.head_end >= 0 && (uint64_t)M.head_end == offset && (queued || !is_write)) {
        s.sequential = 1;
    } else {
        s.overhead = M.overhead_ns;
        double n = fabs(x - M.head_x) * M.cylinders;
        s.same_cylinder = n < 1.0;
        s.seek = seek_ms(is_write ? &M.seek_write : &M.seek_read, n) * 1e6;
        /* the platter turns under the head: its angle is the clock modulo one revolution; the
         * sector's angle is its position along the (spiral of) tracks */
        double arrive = (double)t + s.overhead + s.seek;
        double platter = fmod(arrive, M.rev_ns) / M.rev_ns;
        double sector = fmod(x * M.tracks, 1.0);
        double wait = sector - platter;
        if (wait < 0) wait += 1.0;
        s.rotation = wait * M.rev_ns;
    }
    M.head_end = (int64_t)(offset + len);
    M.head_x = x_end;
    return s;
}

/* --- counters ----------------------------------------------------------------------------------- */

static uint64_t cpu_ns(int user) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    struct timeval tv = user ? ru.ru_utime : ru.ru_stime;
    return (uint64_t)tv.tv_sec * 1000000000ULL + (uint64_t)tv.tv_usec * 1000ULL;
}

static int format_stats(char *out, size_t n) {
    int64_t t = now_ns();
    return snprintf(
        out, n,
        "uptime_ns %" PRId64 "\nrequests %" PRIu64 "\nreads %" PRIu64 "\nwrites %" PRIu64 "\nflushes %" PRIu64
        "\nread_bytes %" PRIu64 "\nwrite_bytes %" PRIu64 "\nsequential %" PRIu64 "\nseeks %" PRIu64
        "\nsame_cylinder %" PRIu64 "\noverhead_ns %" PRIu64 "\nseek_ns %" PRIu64 "\nrotation_ns %" PRIu64
        "\ntransfer_ns %" PRIu64 "\nread_service_ns %" PRIu64 "\nwrite_service_ns %" PRIu64
        "\nread_busy_ns %" PRIu64 "\nwrite_busy_ns %" PRIu64 "\nidle_ns %" PRIu64 "\nqueued %" PRIu64
        "\nqueued_reads %" PRIu64 "\nreads_after_write %" PRIu64 "\nlate %" PRIu64 "\nlate_ns %" PRIu64
        "\nbacking_errors %" PRIu64 "\ncpu_user_ns %" PRIu64 "\ncpu_sys_ns %" PRIu64 "\nwrite_cache %d\n",
        t - t_start, C.requests, C.reads, C.writes, C.flushes, C.read_bytes, C.write_bytes, C.sequential, C.seeks,
        C.same_cylinder, C.overhead_ns, C.seek_ns, C.rotation_ns, C.transfer_ns, C.read_service_ns,
        C.write_service_ns, C.read_busy_ns, C.write_busy_ns,
        (uint64_t)(t - t_start) - C.read_busy_ns - C.write_busy_ns, C.queued, C.queued_reads,
        C.reads_after_write, C.late, C.late_ns, C.backing_errors, cpu_ns(1), cpu_ns(0), M.write_cache);
}

static void series_line(double epoch, const counters *d) {
    fprintf(series,
            "%.3f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
            ",%" PRIu64 ",%" PRIu64 "\n",
            epoch, d->reads, d->writes, d->read_bytes, d->write_bytes, d->read_busy_ns, d->write_busy_ns, d->queued,
            d->queued_reads, d->reads_after_write, d->flushes);
}

/* one CSV line per second: at `t` (monotonic), the lines of every second that ended since the last call;
 * the counts since then go on the first of them (nothing happened in the rest: the daemon was waiting) */
static void series_tick(int64_t t) {
    if (series == NULL || t < t_next_series) return;
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    double now_epoch = rt.tv_sec + rt.tv_nsec / 1e9;
    counters d = {0};
    d.reads = C.reads - C_last.reads;
    d.writes = C.writes - C_last.writes;
    d.read_bytes = C.read_bytes - C_last.read_bytes;
    d.write_bytes = C.write_bytes - C_last.write_bytes;
    d.read_busy_ns = C.read_busy_ns - C_last.read_busy_ns;
    d.write_busy_ns = C.write_busy_ns - C_last.write_busy_ns;
    d.queued = C.queued - C_last.queued;
    d.queued_reads = C.queued_reads - C_last.queued_reads;
    d.reads_after_write = C.reads_after_write - C_last.reads_after_write;
    d.flushes = C.flushes - C_last.flushes;
    static const counters zero;
    for (int first = 1; t_next_series <= t; first = 0, t_next_series += 1000000000LL)
        series_line(now_epoch - (double)(t - t_next_series) / 1e9, first ? &d : &zero);
    fflush(series);
    C_last = C;
}

/* --- FUSE operations ---------------------------------------------------------------------------- */

static void fill_attr(fuse_ino_t ino, struct stat *st) {
    memset(st, 0, sizeof(*st));
    st->st_ino = ino;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (ino == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0755;
        st->st_nlink = 2;
    } else if (ino == INO_DISK) {
        st->st_mode = S_IFREG | 0600;
        st->st_nlink = 1;
        st->st_size = (off_t)M.size;
        st->st_blocks = (blkcnt_t)(M.size / 512);
        st->st_blksize = 4096;
    } else {
        st->st_mode = S_IFREG | 0444;
        st->st_nlink = 1;
        st->st_size = 0; /* read with direct_io: its length is whatever the read returns */
    }
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
    (void)userdata;
    conn->max_write = MAX_IO;
    conn->max_read = MAX_IO;
    /* let the kernel queue many requests: they wait in its one FIFO queue, not in a second one */
    conn->max_background = 128;
    conn->congestion_threshold = 128;
    if (conn->capable & FUSE_CAP_ASYNC_DIO) conn->want |= FUSE_CAP_ASYNC_DIO;
    conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
    struct fuse_entry_param e;
    memset(&e, 0, sizeof(e));
    if (parent != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    if (strcmp(name, "disk") == 0)
        e.ino = INO_DISK;
    else if (strcmp(name, "stats") == 0)
        e.ino = INO_STATS;
    else {
        fuse_reply_err(req, ENOENT);
        return;
    }
    fill_attr(e.ino, &e.attr);
    e.attr_timeout = 1.0;
    e.entry_timeout = 1.0;
    fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)fi;
    if (ino != FUSE_ROOT_ID && ino != INO_DISK && ino != INO_STATS) {
        fuse_reply_err(req, ENOENT);
        return;
    }
    struct stat st;
    fill_attr(ino, &st);
    fuse_reply_attr(req, &st, 1.0);
}

static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi) {
    (void)fi;
    /* the disk's size is its backing file's: a resize is refused, anything else changes nothing */
    if ((to_set & FUSE_SET_ATTR_SIZE) && (ino != INO_DISK || (uint64_t)attr->st_size != M.size)) {
        fuse_reply_err(req, EPERM);
        return;
    }
    op_getattr(req, ino, NULL);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)fi;
    if (ino != FUSE_ROOT_ID) {
        fuse_reply_err(req, ENOTDIR);
        return;
    }
    char buf[512];
    size_t used = 0;
    const char *names[] = {".", "..", "disk", "stats"};
    fuse_ino_t inos[] = {FUSE_ROOT_ID, FUSE_ROOT_ID, INO_DISK, INO_STATS};
    for (off_t i = off; i < 4; i++) {
        struct stat st;
        fill_attr(inos[i], &st);
        size_t n = fuse_add_direntry(req, buf + used, sizeof(buf) - used, names[i], &st, i + 1);
        if (used + n > size || used + n > sizeof(buf)) break;
        used += n;
    }
    fuse_reply_buf(req, buf, used);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    if (ino != INO_DISK && ino != INO_STATS) {
        fuse_reply_err(req, EISDIR);
        return;
    }
    if (ino == INO_STATS && (fi->flags & O_ACCMODE) != O_RDONLY) {
        fuse_reply_err(req, EACCES);
        return;
    }
    fi->direct_io = 1; /* no page cache for either file: every read and write reaches the model */
    fi->keep_cache = 0;
    if (ino == INO_STATS) {
        format_stats(stats_text, sizeof(stats_text));
        fuse_reply_open(req, fi);
        return;
    }
    /* The disk also gets FOPEN_PARALLEL_DIRECT_WRITES (kernel 6.2+; libfuse 3.14 has no field for it, so the
     * open reply is written here, as fuse_reply_open would, plus that flag): without it the kernel takes the
     * inode's lock for each direct write until the reply, so the loop device's writes reach the queue one
     * at a time however many it has in flight, and a stream of sequential writes would look idle between
     * them (each arriving after the previous completed) instead of queued. */
    struct {
        uint64_t fh;
        uint32_t open_flags;
        uint32_t padding;
    } out = {.fh = fi->fh, .open_flags = (1u << 0) /* FOPEN_DIRECT_IO */ | (1u << 6) /* PARALLEL_DIRECT_WRITES */};
    fuse_reply_buf(req, (const char *)&out, sizeof(out));
}

/* the head's work on one request: its modelled completion, the data moved, the reply at that time */
static void serve(fuse_req_t req, int is_write, const char *wbuf, size_t size, off_t off) {
    int64_t picked = now_ns();
    int queued = next_queued && picked - t_last_reply < BACKLOG_NS && C.requests > 0;
    if (off < 0 || (uint64_t)off >= M.size) {
        if (is_write)
            fuse_reply_err(req, ENOSPC);
        else
            fuse_reply_buf(req, NULL, 0);
        return;
    }
    if ((uint64_t)off + size > M.size) size = (size_t)(M.size - (uint64_t)off);
    /* a request that was already queued starts when the head finished the previous one: the daemon's
     * reply to that one (the kernel's copy of its data) and this receive are the interface's time, which
     * a disk overlaps with the next request's mechanics, not the head's */
    int64_t start = queued ? t_last_done : picked;
    service s = model_request(is_write, (uint64_t)off, size, start, queued);
    double total = s.overhead + s.seek + s.rotation + s.transfer;
    int64_t deadline = start + (int64_t)total;

    int fd = (off % 4096 == 0 && size % 4096 == 0) ? backing_fd : backing_buffered;
    ssize_t done;
    if (discard) {
        done = (ssize_t)size;
        if (!is_write) memset(iobuf, 0, size);
    } else if (is_write) {
        /* O_DIRECT needs an aligned buffer; the request's data sits after FUSE's headers */
        if (fd == backing_fd && fd != backing_buffered) memcpy(iobuf, wbuf, size);
        done = pwrite(fd, fd == backing_fd && fd != backing_buffered ? iobuf : wbuf, size, off);
    } else {
        done = pread(fd, iobuf, size, off);
    }
    int err = done < 0 ? errno : 0;
    if (done >= 0 && (size_t)done < size && is_write) err = EIO;

    int64_t ready = now_ns();
    int64_t aim = deadline - wake_ns;
    t_last_done = ready > deadline ? ready : deadline;
    if (ready > deadline) {
        C.late++;
        C.late_ns += (uint64_t)(ready - deadline);
    } else {
        sleep_until(aim);
    }
    /* is the next request already queued? Asked before this reply goes out: one the application issues
     * in answer to it arrives after the head has passed its sector, however fast it comes */
    struct pollfd pfd = {.fd = fuse_fd, .events = POLLIN};
    next_queued = poll(&pfd, 1, 0) > 0;
    if (ready < aim) {
        int64_t delay = now_ns() - aim;
        if (delay >= 0 && delay < 2000000) wake_ns += (delay - wake_ns) / 8;
    }
    if (err) {
        C.backing_errors++;
        fuse_reply_err(req, err);
    } else if (is_write) {
        fuse_reply_write(req, (size_t)done);
    } else {
        fuse_reply_buf(req, iobuf, (size_t)done);
    }
    int64_t end = now_ns();
    t_last_reply = end;

    C.requests++;
    if (is_write) {
        C.writes++;
        C.write_bytes += size;
        C.write_service_ns += (uint64_t)total;
        C.write_busy_ns += (uint64_t)(t_last_done - start); /* the head's time (the reply's copy is not) */
    } else {
        C.reads++;
        C.read_bytes += size;
        C.read_service_ns += (uint64_t)total;
        C.read_busy_ns += (uint64_t)(t_last_done - start);
        if (queued && last_was_write) C.reads_after_write++;
    }
    if (queued) {
        C.queued++;
        if (!is_write) C.queued_reads++;
    }
    if (s.sequential)
        C.sequential++;
    else if (s.same_cylinder)
        C.same_cylinder++;
    else
        C.seeks++;
    C.overhead_ns += (uint64_t)s.overhead;
    C.seek_ns += (uint64_t)s.seek;
    C.rotation_ns += (uint64_t)s.rotation;
    C.transfer_ns += (uint64_t)s.transfer;
    last_was_write = is_write;
    series_tick(end);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)fi;
    if (ino == INO_STATS) {
        size_t len = strlen(stats_text);
        if ((size_t)off >= len)
            fuse_reply_buf(req, NULL, 0);
        else
            fuse_reply_buf(req, stats_text + off, len - (size_t)off < size ? len - (size_t)off : size);
        return;
    }
    serve(req, 0, NULL, size > MAX_IO ? MAX_IO : size, off);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
                     struct fuse_file_info *fi) {
    (void)fi;
    if (ino != INO_DISK) {
        fuse_reply_err(req, EACCES);
        return;
    }
    serve(req, 1, buf, size, off);
}

static void op_fsync(fuse_req_t req, fuse_ino_t ino, int datasync, struct fuse_file_info *fi) {
    (void)ino;
    (void)datasync;
    (void)fi;
    /* write cache off: every write completed only when the backing file had it, so a cache flush has
     * nothing to write and costs no mechanical time */
    C.flushes++;
    fuse_reply_err(req, 0);
}

static void op_flush(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
    (void)ino;
    (void)fi;
    fuse_reply_err(req, 0);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
    (void)ino;
    struct statvfs st;
    memset(&st, 0, sizeof(st));
    st.f_bsize = 4096;
    st.f_frsize = 4096;
    st.f_blocks = M.size / 4096;
    st.f_namemax = 255;
    fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops ops = {
    .init = op_init,
    .lookup = op_lookup,
    .getattr = op_getattr,
    .setattr = op_setattr,
    .readdir = op_readdir,
    .open = op_open,
    .read = op_read,
    .write = op_write,
    .fsync = op_fsync,
    .flush = op_flush,
    .release = op_release,
    .statfs = op_statfs,
};

/* --- set-up ------------------------------------------------------------------------------------- */

static void parse_curve(const char *text, seek_curve *s) {
    if (sscanf(text, "%lf,%lf,%lf,%lf,%lf", &s->a, &s->b, &s->c, &s->e, &s->n0) != 5)
        die("a seek curve is a,b,c,e,n0 (ms, ms/sqrt(cylinder), ms, ms/cylinder, cylinders): %s", text);
}

static void finish_model(void) {
    if (!(M.rev_ns > 0 && M.rate_outer > 0 && M.span > 0 && M.span <= 1 && M.k >= 0 && M.k < 1 &&
          M.cylinders >= 1 && M.tracks >= 1))
        die("model parameters out of range (rev_ns, rate_outer, span, k, cylinders, tracks)");
    M.q_scale = M.span - M.k * M.span * M.span / 2.0;
    M.head_end = -1;
    M.head_x = 0;
}

static int trace(void) {
    char op;
    unsigned long long off, len;
    long long t;
    int queued;
    while (scanf(" %c %llu %llu %lld %d", &op, &off, &len, &t, &queued) == 5) {
        service s = model_request(op == 'w', off, len, t, queued);
        printf("%.1f %.1f %.1f %.1f %d\n", s.overhead, s.seek, s.rotation, s.transfer, s.sequential);
    }
    return 0;
}

static void usage(void) {
    fputs("usage: pgfslab-disk --backing FILE --mountpoint DIR [--series CSV] --rev-ns NS --overhead-ns NS\n"
          "       --rate-outer BYTES_PER_S --k K --span S --cylinders N --tracks N\n"
          "       --seek-read a,b,c,e,n0 --seek-write a,b,c,e,n0 [--fsname NAME]\n"
          "       pgfslab-disk --trace --size BYTES (model parameters as above)\n",
          stderr);
    exit(2);
}

int main(int argc, char **argv) {
    const char *backing = NULL, *mountpoint = NULL, *series_path = NULL, *fsname = "pgfslab-disk";
    int trace_mode = 0, buffered = 0;
    static struct option opts[] = {
        {"backing", 1, 0, 'b'},    {"mountpoint", 1, 0, 'm'}, {"series", 1, 0, 'S'},     {"rev-ns", 1, 0, 'r'},
        {"overhead-ns", 1, 0, 'o'}, {"rate-outer", 1, 0, 'R'}, {"k", 1, 0, 'k'},          {"span", 1, 0, 's'},
        {"cylinders", 1, 0, 'c'},  {"tracks", 1, 0, 't'},     {"seek-read", 1, 0, 'x'},  {"seek-write", 1, 0, 'y'},
        {"trace", 0, 0, 'T'},      {"size", 1, 0, 'z'},       {"fsname", 1, 0, 'f'},     {"buffered", 0, 0, 'B'},
        {"discard", 0, 0, 'D'},    {0, 0, 0, 0},
    };
    int ch;
    while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (ch) {
        case 'b': backing = optarg; break;
        case 'm': mountpoint = optarg; break;
        case 'S': series_path = optarg; break;
        case 'r': M.rev_ns = atof(optarg); break;
        case 'o': M.overhead_ns = atof(optarg); break;
        case 'R': M.rate_outer = atof(optarg); break;
        case 'k': M.k = atof(optarg); break;
        case 's': M.span = atof(optarg); break;
        case 'c': M.cylinders = atof(optarg); break;
        case 't': M.tracks = atof(optarg); break;
        case 'x': parse_curve(optarg, &M.seek_read); break;
        case 'y': parse_curve(optarg, &M.seek_write); break;
        case 'T': trace_mode = 1; break;
        case 'z': M.size = strtoull(optarg, NULL, 10); break;
        case 'f': fsname = optarg; break;
        case 'B': buffered = 1; break;
        case 'D': discard = 1; break;
        default: usage();
        }
    }
    if (trace_mode) {
        if (M.size == 0) usage();
        finish_model();
        return trace();
    }
    if (backing == NULL || mountpoint == NULL) usage();

    backing_buffered = open(backing, O_RDWR | O_CLOEXEC);
    if (backing_buffered < 0) die("cannot open %s: %s", backing, strerror(errno));
    backing_fd = buffered ? backing_buffered : open(backing, O_RDWR | O_CLOEXEC | O_DIRECT);
    if (backing_fd < 0) die("cannot open %s with O_DIRECT: %s (--buffered to go through the page cache)", backing,
                            strerror(errno));
    struct stat st;
    if (fstat(backing_fd, &st) != 0 || !S_ISREG(st.st_mode)) die("%s is not a regular file", backing);
    M.size = (uint64_t)st.st_size;
    if (M.size == 0) die("%s is empty", backing);
    finish_model();
    if (posix_memalign((void **)&iobuf, 4096, MAX_IO) != 0) die("out of memory");
    if (series_path != NULL) {
        series = fopen(series_path, "a");
        if (series == NULL) die("cannot open %s: %s", series_path, strerror(errno));
        /* the format pgfslab/ingest/parsers/disk_series.py reads */
        fputs("# pgfslab-disk: the emulated disk's counters, per second (increments in the second ending at ts)\n"
              "ts,reads,writes,read_bytes,write_bytes,read_busy_ns,write_busy_ns,queued,queued_reads,"
              "reads_after_write,flushes\n",
              series);
        fflush(series);
    }
    /* timing: no timer slack (the default 50 us would be added to every sleep), no page faults in the
     * request path, and never the OOM killer's first choice (the loop device fails without us) */
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) fprintf(stderr, "pgfslab-disk: mlockall: %s\n", strerror(errno));
    FILE *adj = fopen("/proc/self/oom_score_adj", "w");
    if (adj != NULL) {
        fputs("-1000", adj);
        fclose(adj);
    }

    char opt[512];
    snprintf(opt, sizeof(opt), "-ofsname=%s,subtype=pgfslab-disk,max_read=%u,default_permissions", fsname, MAX_IO);
    char *fargv[] = {argv[0], opt, NULL};
    struct fuse_args args = FUSE_ARGS_INIT(2, fargv);
    session = fuse_session_new(&args, &ops, sizeof(ops), NULL);
    if (session == NULL) die("fuse_session_new failed");
    if (fuse_set_signal_handlers(session) != 0) die("cannot install signal handlers");
    if (fuse_session_mount(session, mountpoint) != 0) die("cannot mount on %s", mountpoint);
    /* the lab waits for this line: the file is served from here on */
    printf("ready %s/disk size %" PRIu64 "\n", mountpoint, M.size);
    fflush(stdout);

    t_start = now_ns();
    t_last_reply = t_start;
    t_next_series = t_start + 1000000000LL;
    struct fuse_buf buf = {.mem = NULL};
    int rc = 0;
    fuse_fd = fuse_session_fd(session);
    while (!fuse_session_exited(session)) {
        int res = fuse_session_receive_buf(session, &buf);
        if (res == -EINTR) continue;
        if (res <= 0) {
            rc = res < 0 ? -res : 0;
            break;
        }
        fuse_session_process_buf(session, &buf);
    }
    series_tick(now_ns());
    free(buf.mem);
    fuse_session_unmount(session);
    fuse_remove_signal_handlers(session);
    fuse_session_destroy(session);
    if (series != NULL) fclose(series);
    format_stats(stats_text, sizeof(stats_text));
    fprintf(stderr, "pgfslab-disk: stopped%s%s\n%s", rc ? ": " : "", rc ? strerror(rc) : "", stats_text);
    return rc ? 1 : 0;
}
