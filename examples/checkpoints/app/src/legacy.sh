#!/bin/sh
echo "the old way"
