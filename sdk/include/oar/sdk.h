// The oar plugin SDK: include this one header.
#pragma once
#include <oar/device_api.h>
#include <oar/sdk/iter.h>
#include <oar/sdk/kernel.h>
#include <oar/sdk/parallel.h>
#include <oar/sdk/plugin.h>
#include <oar/sdk/collective.h>
#include <oar/sdk/random.h>
#include <oar/sdk/streams.h>
#include <oar/sdk/tables.h>
#include <oar/sdk/types.h>
