#!/bin/sh
. ./.env 2>/dev/null
echo "${GREETING:-hello} from the sandbox in $(pwd)"
