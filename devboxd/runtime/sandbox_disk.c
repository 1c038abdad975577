/* The devbox's disk: a sparse ext4 image of limits.disk_bytes beside the
 * devbox dir (<dir>.img), loop-mounted on the dir itself.  Everything the
 * devbox can make devboxd store (its writable layer, its layer copies, the
 * output files of its commands) lives on it, so writing past the size is
 * ENOSPC inside the devbox and the host loses at most disk_bytes. */
#define _GNU_SOURCE
#include "sandbox_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define LOOP_TRIES 32    /* another process may take the free device first */
#define SB_DISK_FORMAT 1 /* bump when run_mkfs's options change */

int sandbox_disk_image_path(const char *dir, char *buf, size_t len)
{
    size_t n;
    int w;

    if (dir == NULL || dir[0] != '/')
        return -EINVAL;
    n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    if (n <= 1)
        return -EINVAL; /* "/" has no place beside it */
    w = snprintf(buf, len, "%.*s.img", (int)n, dir);
    return (w < 0 || (size_t)w >= len) ? -ENAMETOOLONG : 0;
}

/* 1 when dir is the root of a mount, 0 when not, or -errno. */
static int is_mount_root(const char *dir)
{
    struct statx stx;

    if (statx(AT_FDCWD, dir, AT_SYMLINK_NOFOLLOW, STATX_TYPE, &stx) != 0)
        return -errno;
    if (!(stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
        return -ENOTSUP;
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

static bool dir_is_empty(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    bool empty = true;

    if (d == NULL)
        return false;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            empty = false;
            break;
        }
    }
    closedir(d);
    return empty;
}

static const char *mkfs_path(void)
{
    return access("/usr/sbin/mkfs.ext4", X_OK) == 0 ? "/usr/sbin/mkfs.ext4"
                                                    : "/sbin/mkfs.ext4";
}

/* mkfs.ext4 on the image: 4 KiB blocks, no blocks reserved for root (the
 * devbox's root is not host root), inode tables and journal left for the
 * kernel (a sparse file reads as zeros).  Its words on failure join err. */
static int run_mkfs(const char *img, char *err, size_t errlen)
{
    char *const argv[] = {(char *)mkfs_path(),
                          "-q",
                          "-F",
                          "-b",
                          "4096",
                          "-m",
                          "0",
                          "-E",
                          "lazy_itable_init=1,lazy_journal_init=1,nodiscard",
                          (char *)img,
                          NULL};
    posix_spawn_file_actions_t fa;
    char out[256];
    int pp[2] = {-1, -1};
    int status = 0;
    pid_t pid = -1;
    int rc;

    if (pipe2(pp, O_CLOEXEC) != 0)
        return sandbox_fs_err(err, errlen, -errno, "cannot run mkfs.ext4: %s",
                              strerror(errno));
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pp[1], 2);
    rc = sandbox_spawn(&pid, argv[0], &fa, argv);
    posix_spawn_file_actions_destroy(&fa);
    close(pp[1]);
    if (rc != 0) {
        close(pp[0]);
        return sandbox_fs_err(
            err, errlen, -rc,
            "cannot run %s: %s; install e2fsprogs (scripts/bootstrap) or set "
            "RLMCP_DEVBOX_DISK=off",
            argv[0], strerror(rc));
    }
    status = sandbox_collect(pid, pp[0], out, sizeof(out));
    close(pp[0]);
    if (status != 0)
        return sandbox_fs_err(err, errlen, -EIO, "mkfs.ext4 failed on %s: %s",
                              img, out[0] != '\0' ? out : "no message");
    return 0;
}

/* A new sparse file of bytes at path with an ext4 on it. */
static int format_image(const char *img, uint64_t bytes, char *err,
                        size_t errlen)
{
    int fd =
        open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    int rc = 0;

    if (fd < 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create the devbox disk %s: %s", img,
                              strerror(errno));
    if (ftruncate(fd, (off_t)bytes) != 0)
        rc = sandbox_fs_err(err, errlen, -errno,
                            "cannot size the devbox disk %s: %s", img,
                            strerror(errno));
    close(fd);
    if (rc == 0)
        rc = run_mkfs(img, err, errlen);
    if (rc != 0)
        unlink(img);
    return rc;
}

/* The formatted image of a size, made once per state dir (mkfs.ext4 is
 * the slow part of a first boot) and copied for each devbox:
 * <state>/sandbox/disks/ext4-v<format>-<bytes>.img.  Made under a private
 * name and renamed, so a reader never sees half of one. */
static int template_for(uint64_t bytes, char *path, size_t len, char *err,
                        size_t errlen)
{
    char tmp[4300];
    int n;
    int rc;

    n = snprintf(path, len, "%s/sandbox/disks", sandbox_rt.state_dir);
    if (n < 0 || (size_t)n >= len)
        return sandbox_fs_err(err, errlen, -ENAMETOOLONG,
                              "state dir path too long");
    if (mkdir(path, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno, "cannot create %s: %s", path,
                              strerror(errno));
    n = snprintf(path, len, "%s/sandbox/disks/ext4-v%d-%llu.img",
                 sandbox_rt.state_dir, SB_DISK_FORMAT,
                 (unsigned long long)bytes);
    if (n < 0 || (size_t)n >= len)
        return sandbox_fs_err(err, errlen, -ENAMETOOLONG,
                              "state dir path too long");
    if (access(path, R_OK) == 0)
        return 0;
    snprintf(tmp, sizeof(tmp), "%s.%d.%ld.tmp", path, (int)getpid(),
             (long)gettid());
    unlink(tmp);
    rc = format_image(tmp, bytes, err, errlen);
    if (rc == 0 && rename(tmp, path) != 0) {
        rc = sandbox_fs_err(err, errlen, -errno, "cannot keep %s: %s", path,
                            strerror(errno));
        unlink(tmp);
    }
    return rc;
}

/* Copies the template's data extents only: the copy is as sparse. */
static int copy_extents(int in, int out, off_t end)
{
    off_t off = 0;
    off_t data;
    off_t hole;
    loff_t ip;
    loff_t op;
    ssize_t n;

    while (off < end) {
        data = lseek(in, off, SEEK_DATA);
        if (data < 0)
            return errno == ENXIO ? 0 : -errno;
        hole = lseek(in, data, SEEK_HOLE);
        if (hole < 0)
            return -errno;
        ip = op = data;
        while (ip < hole) {
            n = copy_file_range(in, &ip, out, &op, (size_t)(hole - ip), 0);
            if (n <= 0)
                return n < 0 ? -errno : -EIO;
        }
        off = hole;
    }
    return 0;
}

/* A new devbox disk at img: a sparse copy of the template of its size. */
static int make_image(const char *img, uint64_t bytes, char *err, size_t errlen)
{
    char tpl[4096];
    int in = -1;
    int out = -1;
    int rc;

    rc = template_for(bytes, tpl, sizeof(tpl), err, errlen);
    if (rc != 0)
        return rc;
    in = open(tpl, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    out = open(img, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (in < 0 || out < 0) {
        rc = sandbox_fs_err(err, errlen, -errno,
                            "cannot create the devbox disk %s: %s", img,
                            strerror(errno));
        goto out;
    }
    if (ftruncate(out, (off_t)bytes) != 0)
        rc = -errno;
    else
        rc = copy_extents(in, out, (off_t)bytes);
    if (rc != 0)
        sandbox_fs_err(err, errlen, rc, "cannot write the devbox disk %s: %s",
                       img, strerror(-rc));
out:
    sandbox_close_fd(in);
    sandbox_close_fd(out);
    if (rc != 0 && out >= 0)
        unlink(img);
    return rc;
}

/* Binds imgfd to a free loop device that detaches itself once unmounted
 * (LO_FLAGS_AUTOCLEAR).  Returns the device's open fd, its name in dev. */
static int loop_attach(int imgfd, char *dev, size_t devlen, char *err,
                       size_t errlen)
{
    struct loop_config cfg;
    int ctl;
    int fd = -1;
    int n;
    int i;

    ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return sandbox_fs_err(
            err, errlen, -errno,
            "loop devices are unavailable (/dev/loop-control: %s); devbox "
            "disks "
            "need them (modprobe loop), or set RLMCP_DEVBOX_DISK=off to leave "
            "disk sizes unenforced",
            strerror(errno));
    for (i = 0; i < LOOP_TRIES; i++) {
        n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0) {
            fd = sandbox_fs_err(err, errlen, -errno, "no free loop device: %s",
                                strerror(errno));
            break;
        }
        snprintf(dev, devlen, "/dev/loop%d", n);
        fd = open(dev, O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            fd = sandbox_fs_err(err, errlen, -errno, "cannot open %s: %s", dev,
                                strerror(errno));
            break;
        }
        memset(&cfg, 0, sizeof(cfg));
        cfg.fd = (__u32)imgfd;
        cfg.block_size = 4096;
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0)
            break;
        n = errno;
        close(fd);
        fd = sandbox_fs_err(err, errlen, -n, "cannot set up %s: %s", dev,
                            strerror(n));
        if (n != EBUSY)
            break;
    }
    close(ctl);
    return fd;
}

/* A loop device bound to the image already: a mount namespace that was
 * created while the disk was mounted (a sandbox launcher's, even another
 * engine's) keeps a copy of the mount, and with it the device, after
 * devboxd unmounted it.  Mounting that device again gives the same ext4;
 * a second device would give a second one writing the same image. */
static bool find_loop(int imgfd, char *dev, size_t devlen)
{
    struct loop_info64 info;
    struct stat st;
    struct dirent *de;
    bool found = false;
    DIR *d = NULL;
    int fd;

    if (fstat(imgfd, &st) != 0)
        return false;
    d = opendir("/sys/block");
    while (d != NULL && !found && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "loop", 4) != 0)
            continue;
        snprintf(dev, devlen, "/dev/%.20s", de->d_name);
        fd = open(dev, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (ioctl(fd, LOOP_GET_STATUS64, &info) == 0 &&
            info.lo_device == (__u64)st.st_dev &&
            info.lo_inode == (__u64)st.st_ino)
            found = true;
        close(fd);
    }
    if (d != NULL)
        closedir(d);
    return found;
}

/* discard: space freed inside goes back to the host (holes punched in the
 * image); noinit_itable: nothing to zero in a sparse file.  Read-only:
 * norecovery too, since replaying a journal writes (a disk whose journal
 * cannot be replayed still shows the files it had committed). */
static int mount_dev(const char *dev, const char *dir, bool ro)
{
    int rc;

    if (ro) {
        rc = mount(dev, dir, "ext4", MS_NODEV | MS_NOSUID | MS_RDONLY, "");
        if (rc != 0)
            rc = mount(dev, dir, "ext4", MS_NODEV | MS_NOSUID | MS_RDONLY,
                       "norecovery");
        return rc != 0 ? -errno : 0;
    }
    /* errors=remount-ro: after a storage error (the host's disk full under
     * the image) the disk stops taking writes instead of going on. */
    if (mount(dev, dir, "ext4", MS_NODEV | MS_NOSUID,
              "discard,noinit_itable,errors=remount-ro") != 0)
        return -errno;
    return 0;
}

/* fresh: img was made just now, so no loop device can hold it yet and
 * the scan of every loop device (an open and ioctl each) is skipped. */
static int mount_image(const char *dir, const char *img, bool fresh, bool ro,
                       char *err, size_t errlen)
{
    char dev[32];
    int imgfd;
    int loopfd = -1;
    int rc;

    imgfd = open(img, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
    if (imgfd < 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot open the devbox disk %s: %s", img,
                              strerror(errno));
    /* Fails when that device was freed meanwhile: then a new one. */
    rc = !fresh && find_loop(imgfd, dev, sizeof(dev)) ? mount_dev(dev, dir, ro)
                                                      : -ENODEV;
    if (rc != 0) {
        loopfd = loop_attach(imgfd, dev, sizeof(dev), err, errlen);
        rc = loopfd < 0 ? loopfd : mount_dev(dev, dir, ro);
        if (loopfd >= 0 && rc != 0)
            sandbox_fs_err(err, errlen, rc,
                           "cannot mount the devbox disk %s on %s: %s", img,
                           dir, strerror(-rc));
    }
    close(imgfd);
    if (rc == 0 && !ro && chmod(dir, 0700) != 0) {
        rc =
            sandbox_fs_err(err, errlen, -errno, "cannot set the mode of %s: %s",
                           dir, strerror(errno));
        umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
    }
    /* The mount holds the device now; AUTOCLEAR frees it after. */
    sandbox_close_fd(loopfd);
    return rc;
}

/* A disk that cannot be used read-write (why: -errno, words in err): it is
 * mounted read-only instead (unmounted first when the kernel turned a
 * read-write mount read-only), -EROFS with err saying so, or the read-only
 * mount's error. */
static int keep_read_only(const char *dir, const char *img, int why, char *err,
                          size_t errlen)
{
    char first[512];
    int rc;

    if (why == -EROFS)
        snprintf(first, sizeof(first),
                 "the kernel turned it read-only (a storage error: see "
                 "dmesg)");
    else
        snprintf(first, sizeof(first), "%s", err);
    if (is_mount_root(dir) > 0)
        umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW);
    rc = mount_image(dir, img, false, true, err, errlen);
    if (rc != 0)
        return sandbox_fs_err(
            err, errlen, rc,
            "the devbox disk %s cannot be mounted read-write (%s) "
            "nor read-only (%s); the image is kept as it is",
            img, first, strerror(-rc));
    return sandbox_fs_err(
        err, errlen, -EROFS,
        "the devbox disk %s cannot be used read-write (%s); it is "
        "kept, mounted read-only: its files can still be downloaded",
        img, first);
}

int sandbox_disk_attach(const char *dir, uint64_t bytes, char *err,
                        size_t errlen)
{
    char img[4096];
    struct stat st;
    int rc;

    if (dir == NULL || !sandbox_fs_valid_layer_path(dir))
        return sandbox_fs_err(err, errlen, -EINVAL,
                              "devbox dir must be an absolute path");
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create devbox dir %s: %s", dir,
                              strerror(errno));
    rc = is_mount_root(dir);
    if (rc != 0)
        return rc > 0 ? 0
                      : sandbox_fs_err(err, errlen, rc, "cannot inspect %s: %s",
                                       dir, strerror(-rc));
    rc = sandbox_disk_image_path(dir, img, sizeof(img));
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc, "devbox dir path too long");
    /* A disk that exists is mounted whatever the mode: the files are on it.
     * One the kernel will not mount read-write (errors left by a full
     * host disk, an aborted journal) is mounted read-only, so its files
     * stay readable, and the caller is told (-EROFS); never deleted. */
    if (stat(img, &st) == 0) {
        rc = mount_image(dir, img, false, false, err, errlen);
        if (rc == 0)
            rc = sandbox_disk_state(dir);
        return rc == 0 ? 0 : keep_read_only(dir, img, rc, err, errlen);
    }
    if (errno != ENOENT)
        return sandbox_fs_err(err, errlen, -errno, "cannot inspect %s: %s", img,
                              strerror(errno));
    if (bytes == 0 || !sandbox_rt.disk_on)
        return 0;
    if (bytes < SANDBOX_DISK_MIN_BYTES)
        return sandbox_fs_err(
            err, errlen, -EINVAL, "a devbox disk needs at least %llu MiB",
            (unsigned long long)(SANDBOX_DISK_MIN_BYTES >> 20));
    if (!dir_is_empty(dir)) {
        /* Made before devbox disks, or while they were off: its files
         * stay where they are. */
        fprintf(stderr,
                "devboxd: %s holds files but no disk image; its disk size is "
                "not enforced\n",
                dir);
        return 0;
    }
    rc = make_image(img, bytes, err, errlen);
    if (rc != 0)
        return rc;
    return mount_image(dir, img, true, false, err, errlen);
}

/* Whether the kernel stopped writes to the filesystem mounted on dir
 * without marking it read-only for statvfs: ext4 after an error with
 * errors=remount-ro shows "emergency_ro" in its super options (6.x). */
static bool emergency_ro(const char *dir)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    size_t dlen = strlen(dir);
    bool ro = false;
    char *p;
    int i;

    while (f != NULL && !ro && getline(&line, &cap, f) > 0) {
        p = line;
        for (i = 0; i < 4 && p != NULL; i++) { /* the 5th field: mount point */
            p = strchr(p, ' ');
            p = p != NULL ? p + 1 : NULL;
        }
        if (p == NULL || strncmp(p, dir, dlen) != 0 || p[dlen] != ' ')
            continue;
        p = strstr(p, " - ");
        if (p != NULL &&
            (strstr(p, " ro,") != NULL || strstr(p, "emergency_ro") != NULL))
            ro = true;
    }
    free(line);
    if (f != NULL)
        fclose(f);
    return ro;
}

int sandbox_disk_state(const char *dir)
{
    struct statvfs vfs;

    if (dir == NULL || is_mount_root(dir) <= 0)
        return 0;
    if (statvfs(dir, &vfs) != 0)
        return -errno;
    if ((vfs.f_flag & ST_RDONLY) != 0 || emergency_ro(dir))
        return -EROFS;
    return 0;
}

int sandbox_disk_mount_ro(const char *dir, char *err, size_t errlen)
{
    char img[4096];
    int rc;

    if (dir == NULL || sandbox_disk_image_path(dir, img, sizeof(img)) != 0)
        return sandbox_fs_err(err, errlen, -EINVAL, "devbox dir path too long");
    if (access(img, F_OK) != 0)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot open the devbox disk %s: %s", img,
                              strerror(errno));
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return sandbox_fs_err(err, errlen, -errno,
                              "cannot create devbox dir %s: %s", dir,
                              strerror(errno));
    rc = is_mount_root(dir);
    if (rc > 0)
        return 0;
    rc = mount_image(dir, img, false, true, err, errlen);
    return rc;
}

int sandbox_disk_usage(const char *dir, uint64_t *size, uint64_t *allocated)
{
    char img[4096];
    struct stat st;

    *size = 0;
    *allocated = 0;
    if (!sandbox_rt.disk_on)
        return -ENOTSUP;
    if (dir == NULL || sandbox_disk_image_path(dir, img, sizeof(img)) != 0)
        return -EINVAL;
    if (stat(img, &st) != 0)
        return -errno;
    *size = (uint64_t)st.st_size;
    *allocated = (uint64_t)st.st_blocks * 512;
    return 0;
}

int sandbox_disk_detach(const char *dir)
{
    if (dir == NULL || is_mount_root(dir) <= 0)
        return 0;
    /* Lazy: an output file a reader still holds keeps the disk until closed. */
    if (umount2(dir, MNT_DETACH | UMOUNT_NOFOLLOW) != 0)
        return -errno;
    return 0;
}

/* sandbox_destroy_dir's part: the disk's claims are on the disk, so it is
 * mounted to release them, then unmounted and deleted. */
int sandbox_disk_destroy(const char *dir, char *err, size_t errlen)
{
    char img[4096];
    struct stat st;
    int rc;

    if (sandbox_disk_image_path(dir, img, sizeof(img)) != 0)
        return sandbox_fs_err(err, errlen, -ENAMETOOLONG,
                              "devbox dir path too long");
    if (stat(img, &st) != 0)
        return 0;
    if (is_mount_root(dir) == 0 &&
        mount_image(dir, img, false, false, err, errlen) != 0)
        fprintf(stderr, "devboxd: %s\n", err); /* deleted all the same */
    rc = sandbox_fs_uid_release(dir);
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc,
                              "cannot release the uid of %s: %s", dir,
                              strerror(-rc));
    rc = sandbox_disk_detach(dir);
    if (rc != 0)
        return sandbox_fs_err(err, errlen, rc,
                              "cannot unmount the devbox disk %s: %s", dir,
                              strerror(-rc));
    if (unlink(img) != 0 && errno != ENOENT)
        return sandbox_fs_err(err, errlen, -errno, "cannot delete %s: %s", img,
                              strerror(errno));
    return 0;
}
