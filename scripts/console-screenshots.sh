#!/bin/sh
# Refreshes the support console screenshots that docs/console.md shows (docs/images/*.png) from
# a real headless Chromium run: the browser test that photographs every page at laptop (1280×800)
# and phone (390×844) size writes into a scratch folder, and the pictures docs/console.md shows
# are copied into docs/images. Needs chromium and chromium-driver (as the browser tests do) and a
# Swift toolchain.
#   scripts/console-screenshots.sh            # the set docs/console.md shows
#   scripts/console-screenshots.sh user-phone # or the names given (see the test for all of them)
set -eu
cd "$(dirname "$0")/.."
shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
CONSOLE_SCREENSHOTS_DIR="$shots" swift test --filter 'ConsoleBrowserTests/testScreenshotsOfEveryPageAtLaptopAndPhoneSize'
names=${*:-overview-laptop alerts-laptop alerts-phone job-phone user-laptop user-phone user-credited-phone}
for name in $names; do
    if [ ! -f "$shots/$name.png" ]; then
        echo "console-screenshots: no $name.png was taken (is chromium-driver installed? the test skips without it)" >&2
        exit 1
    fi
    cp "$shots/$name.png" "docs/images/$name.png"
done
echo "refreshed: $names"
