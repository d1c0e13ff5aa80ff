set -e
cd repo
sha=$(git log -g --format='%H %s' HEAD | awk '/ tune feature flag$/ {print $1; exit}')
git branch feature "$sha"
