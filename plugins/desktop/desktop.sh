# desktop.sh - one action of the computer tool on a devbox's virtual display.
# The plugin prepends the call's variables (shell-quoted) and runs this with
# sh in the devbox; it is embedded in the plugin, so the devbox needs only
# the desktop image's packages.
#
# In:  ACT (the action), W H (the display size to start), X Y (coordinate),
#      SX SY (start_coordinate), TEXT, SDIR SAMT (scroll), DUR (seconds),
#      IW IH (screenshot size), SHOT (1: screenshot after the action),
#      URL (open in Chromium first), VPORT VIEWONLY (the viewer), DNUM.
# Out: one JSON line on stdout; a failure exits with a code the plugin
#      names (see desktop.c) and its reason as the last line of stderr.
# shellcheck disable=SC2046,SC2086 # key names are split on spaces (set -f)
set -u
set -f # key names and texts are split on spaces, never globbed
D=/tmp/rlmcp-desktop
export DISPLAY=":$DNUM"
umask 077

die() { echo "$2" >&2; exit "$1"; }
# 80: a tool of the desktop image is missing; 81: the display did not
# start; 82: bad input found here (a key name, a coordinate off the
# display); 83: the action itself failed; 84: the browser did not start.
for t in Xvfb openbox xdotool scrot; do
    command -v "$t" >/dev/null 2>&1 ||
        die 80 "this devbox has no $t: it is not a desktop devbox"
done
mkdir -p "$D" 2>/dev/null || die 83 "cannot create $D"

display_up() { xdotool getdisplaygeometry >/dev/null 2>&1; }
wm_up() { xdotool get_num_desktops >/dev/null 2>&1; }

# Waits up to $1 tenths of a second for the command $2.
wait_for() {
    n=0
    while ! $2; do
        n=$((n + 1))
        [ "$n" -le "$1" ] || return 1
        sleep 0.1
    done
}

# The display, its window manager and (asked for) the viewer start once per
# devbox and stay up between calls: setsid keeps them out of this command's
# process group, which ends with it. A lock keeps two first calls from
# starting two (9>&-: the processes started must not hold it).
start_display() {
    exec 9>"$D/start.lock"
    flock -w 120 9 || die 81 "another call is starting the display for over 120 s"
    if ! display_up; then
        # A resumed devbox keeps /tmp but not its processes.
        rm -f "/tmp/.X$DNUM-lock" "/tmp/.X11-unix/X$DNUM"
        # -noreset: by default the server resets when its last client
        # leaves, and the check below is a client: openbox, connecting
        # during that reset, would find no display.
        setsid Xvfb ":$DNUM" -screen 0 "${W}x${H}x24" -nolisten tcp -noreset \
            >"$D/xvfb.log" 2>&1 </dev/null 9>&- &
        wait_for 300 display_up ||
            die 81 "the display did not start in 30 s: $(tail -n 3 "$D/xvfb.log" | tr '\n' ' ')"
    fi
    if ! wm_up; then
        setsid openbox >"$D/openbox.log" 2>&1 </dev/null 9>&- &
        wait_for 300 wm_up ||
            die 81 "the window manager did not start in 30 s: $(tail -n 3 "$D/openbox.log" | tr '\n' ' ')"
    fi
    exec 9>&-
}

chromium_window() {
    xdotool search --onlyvisible --class chromium >/dev/null 2>&1
}

# Chromium on the display; a second URL opens in a new tab of the running
# one (same profile).  No sandbox of its own: the devbox is the sandbox and
# allows no user namespaces inside.  --test-type hides the bar that would
# warn about that flag and push the page down.
open_url() {
    setsid chromium --no-sandbox --test-type --no-first-run \
        --no-default-browser-check --disable-dev-shm-usage --disable-gpu \
        --password-store=basic --disable-session-crashed-bubble \
        --disable-features=Translate --start-maximized \
        --user-data-dir="$D/chromium" "$URL" \
        >>"$D/chromium.log" 2>&1 </dev/null 9>&- &
    wait_for 900 chromium_window ||
        die 84 "Chromium showed no window in 90 s: $(tail -n 3 "$D/chromium.log" | tr '\n' ' ')"
    # Time for the page to paint before this call's screenshot.
    sleep 1
}

viewer_up() {
    curl -s -o /dev/null --max-time 2 "http://127.0.0.1:$VPORT/vnc.html"
}

# The VNC password (VNC uses 8 characters), made once per devbox: the
# tunnel reaches every port of the devbox, and another port's URL shared
# through the same open tunnel must not show the display.
viewer_password() {
    if [ ! -s "$D/viewer.pass" ]; then
        pw=$(head -c 512 /dev/urandom | tr -dc 'A-Za-z0-9' | head -c 8)
        [ "${#pw}" = 8 ] || die 83 "cannot make a viewer password"
        echo "$pw" >"$D/viewer.pass" || die 83 "cannot write $D/viewer.pass"
    fi
    head -n 1 "$D/viewer.pass"
}

start_viewer() {
    exec 9>"$D/viewer.lock"
    flock -w 60 9 || die 81 "another call is starting the viewer"
    vpass=$(viewer_password) || exit
    if ! viewer_up; then
        ro=
        [ "$VIEWONLY" = 1 ] && ro=-viewonly
        # VNC on the devbox's loopback only; websockify serves noVNC's page
        # and relays its WebSocket on one port, which the tunnel reaches.
        setsid x11vnc -display "$DISPLAY" -rfbport 5900 -localhost -shared \
            -forever -passwdfile "$D/viewer.pass" -quiet $ro \
            >"$D/x11vnc.log" 2>&1 </dev/null 9>&- &
        setsid websockify --web /usr/share/novnc "127.0.0.1:$VPORT" \
            127.0.0.1:5900 >"$D/websockify.log" 2>&1 </dev/null 9>&- &
        wait_for 300 viewer_up ||
            die 81 "the viewer did not start in 30 s: $(tail -n 3 "$D/websockify.log" | tr '\n' ' ')"
    fi
    exec 9>&-
}

# Key names are xdotool's (X keysyms, "ctrl+a", "Return"); a name it does
# not know is only a warning there, so its output is checked.
xdo_keys() {
    out=$(xdotool "$@" 2>&1) || { keys_release "$@"; die 83 "xdotool $1 failed: $out"; }
    case $out in
    *"No such key name"* | *"Invalid key sequence"*)
        keys_release "$@"
        die 82 "unknown key in '$TEXT': $(echo "$out" | head -n 1)" ;;
    esac
}

# A keydown that failed may have pressed the keys it knew: released, so
# they do not stay held for the next calls.
keys_release() {
    [ "$1" = keydown ] || return 0
    shift
    xdotool keyup "$@" >/dev/null 2>&1
}

# Modifier keys held during a click or scroll (text: e.g. "shift", "ctrl").
mods_down() { [ -n "$TEXT" ] && xdo_keys keydown -- $(echo "$TEXT" | tr '+' ' '); }
mods_up() { [ -n "$TEXT" ] && xdo_keys keyup -- $(echo "$TEXT" | tr '+' ' '); }

move_to() {
    [ -n "$X" ] || return 0
    xdotool mousemove -- "$X" "$Y" || die 83 "moving the mouse failed"
}

click() {
    move_to
    mods_down
    xdotool click --repeat "$2" --delay 80 "$1" || die 83 "clicking failed"
    mods_up
}

start_display
geo=$(xdotool getdisplaygeometry)
dw=${geo% *}
dh=${geo#* }
if [ -n "$X" ] && { [ "$X" -ge "$dw" ] || [ "$Y" -ge "$dh" ]; }; then
    die 82 "coordinate [$X, $Y] is outside this devbox's display (${dw}x${dh}, started earlier with another size)"
fi
[ -n "$URL" ] && open_url
[ -n "$IW" ] || { IW=$dw; IH=$dh; }

extra=
case $ACT in
screenshot) SHOT=1 ;;
mouse_move) move_to ;;
left_click) click 1 1 ;;
right_click) click 3 1 ;;
middle_click) click 2 1 ;;
double_click) click 1 2 ;;
triple_click) click 1 3 ;;
left_mouse_down) move_to; xdotool mousedown 1 || die 83 "mouse down failed" ;;
left_mouse_up) move_to; xdotool mouseup 1 || die 83 "mouse up failed" ;;
left_click_drag)
    xdotool mousemove -- "$SX" "$SY" mousedown 1 || die 83 "starting the drag failed"
    # Motion on the way, so that pages see a drag and not a jump.
    i=1
    while [ "$i" -le 10 ]; do
        xdotool mousemove -- $((SX + (X - SX) * i / 10)) $((SY + (Y - SY) * i / 10))
        sleep 0.02
        i=$((i + 1))
    done
    xdotool mouseup 1 || die 83 "ending the drag failed" ;;
type) xdotool type --delay 12 -- "$TEXT" || die 83 "typing failed" ;;
key) xdo_keys key --delay 30 -- $TEXT ;;
hold_key)
    xdo_keys keydown -- $TEXT
    sleep "$DUR"
    xdo_keys keyup -- $TEXT ;;
scroll)
    case $SDIR in up) b=4 ;; down) b=5 ;; left) b=6 ;; right) b=7 ;; esac
    click "$b" "$SAMT" ;;
wait) sleep "$DUR" ;;
cursor_position) ;;
viewer)
    start_viewer
    extra=",\"viewer_password\":\"$vpass\"" ;;
*) die 82 "unknown action '$ACT'" ;;
esac

eval "$(xdotool getmouselocation --shell 2>/dev/null)"
if [ "$SHOT" = 1 ]; then
    # Let the screen settle after an input (a click's repaint).
    [ "$ACT" = screenshot ] || sleep 0.3
    find "$D" -maxdepth 1 -name 'shot-*.png' -mmin +2 -delete 2>/dev/null
    f=$(mktemp "$D/shot-XXXXXXXX") || die 83 "no room for a screenshot in $D"
    mv -f "$f" "$f.png"
    f=$f.png
    scrot -o "$f" 2>"$D/scrot.log" || die 83 "scrot failed: $(tail -n 1 "$D/scrot.log")"
    if [ "$IW" != "$dw" ] || [ "$IH" != "$dh" ]; then
        if ! pngtopam "$f" | pamscale -width "$IW" -height "$IH" | pnmtopng >"$f.tmp" 2>/dev/null; then
            die 83 "scaling the screenshot failed"
        fi
        mv -f "$f.tmp" "$f"
    fi
    extra="$extra,\"shot\":\"$f\",\"image_width\":$IW,\"image_height\":$IH"
fi
printf '{"ok":true,"display_width":%s,"display_height":%s,"x":%s,"y":%s%s}\n' \
    "$dw" "$dh" "${X:-0}" "${Y:-0}" "$extra"
